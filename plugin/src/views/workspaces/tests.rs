use k8s_openapi::jiff::Timestamp;
use providers_shared::api::Workspace;
use serde_json::{Value, json};

use super::*;
use crate::{objects::Fetched, testdata};

fn fetched(status: Value) -> Fetched<Workspace> {
    let raw = testdata::workspace_json(status);
    Fetched {
        typed: serde_json::from_value(raw.clone()).unwrap(),
        raw,
    }
}

fn now() -> Timestamp {
    "2025-01-01T00:10:00Z".parse().unwrap()
}

fn failed() -> Value {
    json!({
        "phase": "Failed", "attempt": 1, "jobResult": "Failed", "job": "podinfo-demo-1",
        "jobUID": "job-uid-1", "finishedAt": "2025-01-01T00:05:00Z",
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "JobFailed", "message": "helm exited 1",
             "lastTransitionTime": "2025-01-01T00:05:00Z"},
            {"type": "Failed", "status": "True", "reason": "JobFailed", "message": "helm exited 1",
             "lastTransitionTime": "2025-01-01T00:05:00Z"}
        ],
        "attempts": [{"attempt": 1, "attemptID": "att-1", "version": "6.5.0", "owner": "alice",
                      "job": "podinfo-demo-1", "result": "Failed",
                      "finishedAt": "2025-01-01T00:05:00Z", "message": "helm exited 1"}]
    })
}

#[test]
fn the_list_shows_one_line_per_workspace() {
    let rendered = status_list(&[fetched(failed())], false, "org-a", now());
    assert_eq!(
        rendered.table,
        "\
NAME   RECIPE    EDGE     VERSION   ATTEMPT   PHASE    AGE
demo   podinfo   edge-1   6.5.0     1         Failed   10m
"
    );
    let all = status_list(&[fetched(failed())], true, "org-a", now());
    assert!(all.wide.starts_with("NAMESPACE   NAME"));
    assert!(all.wide.contains("Failed   alice   podinfo-demo-1"));
    assert_eq!(
        status_list(&[], false, "org-a", now()).empty.as_deref(),
        Some("No workspaces found in namespace org-a.")
    );
}

#[test]
fn the_detail_says_what_to_do_next() {
    let rendered = status_detail(&fetched(failed()), Some("org-a"), now());
    assert_eq!(
        rendered.table,
        "\
Name:       demo
Namespace:  org-a
Recipe:     podinfo
Edge:       edge-1
Version:    6.5.0
Phase:      Failed
Attempt:    1 (retry 0)
Owner:      alice
Job:        podinfo-demo-1
Result:     Failed
Finished:   2025-01-01T00:05:00Z
On delete:  finishes once the installer has cleaned up on edge edge-1, waiting while it is unreachable; if it is gone for good, a platform admin can abandon it (kubectl provider delete demo -n org-a --abandon)
Conditions:
  TYPE     STATUS   REASON      MESSAGE         AGE
  Ready    False    JobFailed   helm exited 1   5m
  Failed   True     JobFailed   helm exited 1   5m
Next:
  Attempt 1 failed. See every attempt: kubectl provider history demo -n org-a
  Run the same pinned plan again: kubectl provider retry demo -n org-a
"
    );
}

#[test]
fn history_adds_the_sealed_attempt_not_yet_reported() {
    let mut raw = failed();
    raw["attempts"][0]["attempt"] = json!(1);
    let mut item = fetched(raw);
    item.typed.spec.plan.as_mut().unwrap().plan.attempt = 2;
    item.typed.spec.plan.as_mut().unwrap().plan.job = "podinfo-demo-2".into();
    let rendered = history(&item);
    assert_eq!(
        rendered.table,
        "\
ATTEMPT   CAUSE   VERSION   OWNER   JOB              RESULT   FINISHED               MESSAGE
1         -       6.5.0     alice   podinfo-demo-1   Failed   2025-01-01T00:05:00Z   helm exited 1
2         -       6.5.0     alice   podinfo-demo-2   -        -                      Sealed: not reported by the installer yet
"
    );
    assert_eq!(rendered.data["attempts"].as_array().unwrap().len(), 2);
}

#[test]
fn target_comes_from_the_sealed_plan() {
    let rendered = target(&fetched(json!({})));
    assert_eq!(
        rendered.table,
        "EDGE     CLUSTER     NAMESPACE   RELEASE\nedge-1   cluster-1   podinfo     podinfo\n"
    );
    assert_eq!(rendered.data["cluster"], "cluster-1");
    let mut unsealed = fetched(json!({}));
    unsealed.typed.spec.plan = None;
    assert!(target(&unsealed).table.contains("<not sealed>"));
}
