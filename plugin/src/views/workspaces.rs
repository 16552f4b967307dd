//! `status`, `history` and `target`: a Workspace's attempts and where it installs.

use k8s_openapi::jiff::Timestamp;
use kube::{Resource, ResourceExt};
use providers::api::{JobResult, Workspace};
use serde_json::json;

use crate::{
    objects::Fetched,
    output::{Rendered, list, resource_name},
    state::{State, next_steps, on_delete, state},
    table::{Fields, Table, col, or_dash, wide},
    views::{age, timestamp},
};

/// `workspace.providers.platform.dev/NAME`.
pub fn name_of(ws: &Workspace) -> String {
    resource_name("Workspace", &Workspace::group(&()), &ws.name_any())
}

/// The version a Workspace runs or asks for.
fn version(ws: &Workspace) -> String {
    match (&ws.spec.plan, &ws.spec.version) {
        (Some(plan), _) => plan.plan.version.clone(),
        (None, Some(v)) => v.clone(),
        (None, None) => "<recipe default>".to_owned(),
    }
}

fn result_word(result: Option<JobResult>) -> String {
    or_dash(result.map(|r| format!("{r:?}")))
}

/// The Workspaces of a namespace (or every namespace, with a NAMESPACE column).
pub fn status_list(
    items: &[Fetched<Workspace>],
    all_namespaces: bool,
    namespace: &str,
    now: Timestamp,
) -> Rendered {
    let mut columns = Vec::new();
    if all_namespaces {
        columns.push(col("NAMESPACE"));
    }
    columns.extend([
        col("NAME"),
        col("RECIPE"),
        col("EDGE"),
        col("VERSION"),
        col("ATTEMPT"),
        col("PHASE"),
        wide("RESULT"),
        wide("OWNER"),
        wide("JOB"),
        col("AGE"),
    ]);
    let mut table = Table::new(&columns);
    for Fetched { typed: ws, .. } in items {
        let plan = ws.spec.plan.as_ref().map(|p| &p.plan);
        let status = ws.status.as_ref();
        let mut row = Vec::new();
        if all_namespaces {
            row.push(ws.namespace().unwrap_or_default());
        }
        row.extend([
            ws.name_any(),
            ws.spec.recipe.clone(),
            ws.spec.edge.clone(),
            version(ws),
            or_dash(plan.map(|p| p.attempt)),
            state(ws).label().to_owned(),
            result_word(status.and_then(|s| s.job_result)),
            or_dash(plan.map(|p| p.owner.username.clone())),
            or_dash(plan.map(|p| p.job.clone())),
            age(now, ws.metadata.creation_timestamp.as_ref()),
        ]);
        table.push(row);
    }
    Rendered {
        data: list(items.iter().map(|w| w.raw.clone()).collect()),
        table: table.render(false),
        wide: table.render(true),
        names: items.iter().map(|w| name_of(&w.typed)).collect(),
        empty: Some(if all_namespaces {
            "No workspaces found.".to_owned()
        } else {
            format!("No workspaces found in namespace {namespace}.")
        }),
        headers: true,
        rows_at: Some("items"),
    }
}

/// One Workspace: its attempt, job, result, conditions and what to do next.
pub fn status_detail(
    item: &Fetched<Workspace>,
    namespace_flag: Option<&str>,
    now: Timestamp,
) -> Rendered {
    let ws = &item.typed;
    let plan = ws.spec.plan.as_ref().map(|p| &p.plan);
    let status = ws.status.clone().unwrap_or_default();
    let current = state(ws);
    let mut fields = Fields::new();
    fields
        .add("Name", ws.name_any())
        .add("Namespace", ws.namespace().unwrap_or_default())
        .add("Recipe", ws.spec.recipe.clone())
        .add("Edge", ws.spec.edge.clone())
        .add("Version", version(ws))
        .add("Phase", current.label());
    match plan {
        Some(p) => {
            fields
                .add("Attempt", format!("{} (retry {})", p.attempt, p.retry))
                .add("Owner", p.owner.username.clone())
                .add("Job", p.job.clone());
        }
        None => {
            fields.add("Attempt", "<not sealed>");
        }
    }
    // The result and finish time describe the current attempt only.
    let current_status = matches!(
        current,
        State::Succeeded { .. }
            | State::Failed { .. }
            | State::Running { .. }
            | State::Pending { .. }
    );
    fields
        .add(
            "Result",
            if current_status {
                result_word(status.job_result)
            } else {
                "-".to_owned()
            },
        )
        .add(
            "Finished",
            if current_status {
                timestamp(status.finished_at.as_ref())
            } else {
                "-".to_owned()
            },
        );
    fields.add(
        if ws.metadata.deletion_timestamp.is_some() {
            "Deletion"
        } else {
            "On delete"
        },
        on_delete(ws, &ws.name_any(), namespace_flag),
    );
    let mut text = fields.render();
    text.push_str("Conditions:\n");
    if status.conditions.is_empty() {
        text.push_str("  <none>\n");
    } else {
        let mut table = Table::new(&[
            col("TYPE"),
            col("STATUS"),
            col("REASON"),
            col("MESSAGE"),
            col("AGE"),
        ]);
        for c in &status.conditions {
            table.push(vec![
                c.type_.clone(),
                c.status.clone(),
                c.reason.clone(),
                c.message.clone(),
                age(now, Some(&c.last_transition_time)),
            ]);
        }
        text.push_str(&table.render_indented(false, "  "));
    }
    text.push_str("Next:\n");
    for step in next_steps(ws, &ws.name_any(), namespace_flag) {
        text.push_str(&format!("  {step}\n"));
    }
    Rendered::text(item.raw.clone(), text, vec![name_of(ws)])
}

/// Every attempt, oldest first, with the sealed attempt the installer has not reported on yet.
/// Why an attempt ran, in the CAUSE column: `Rollback to 2` names the attempt it restored.
fn cause_word(cause: Option<providers::api::Cause>, restores: Option<i64>) -> String {
    use providers::api::Cause;
    match (cause, restores) {
        (Some(Cause::Rollback), Some(to)) => format!("Rollback to {to}"),
        (Some(cause), _) => format!("{cause:?}"),
        (None, _) => "-".to_owned(),
    }
}

pub fn history(item: &Fetched<Workspace>) -> Rendered {
    let ws = &item.typed;
    let status = ws.status.clone().unwrap_or_default();
    let mut table = Table::new(&[
        col("ATTEMPT"),
        col("CAUSE"),
        col("VERSION"),
        col("OWNER"),
        col("JOB"),
        col("RESULT"),
        col("FINISHED"),
        wide("ATTEMPT ID"),
        wide("ROLLBACK"),
        col("MESSAGE"),
    ]);
    let mut attempts: Vec<serde_json::Value> = Vec::new();
    for a in &status.attempts {
        table.push(vec![
            a.attempt.to_string(),
            cause_word(a.cause, a.restores),
            a.version.clone(),
            a.owner.clone(),
            a.job.clone(),
            result_word(a.result),
            timestamp(a.finished_at.as_ref()),
            a.attempt_id.clone(),
            if a.kept.is_some() { "possible" } else { "-" }.to_owned(),
            a.message.clone().unwrap_or_default(),
        ]);
        attempts.push(serde_json::to_value(a).unwrap_or_default());
    }
    if let Some(p) = ws.spec.plan.as_ref().map(|p| &p.plan)
        && !status.attempts.iter().any(|a| a.attempt == p.attempt)
    {
        let label = state(ws).label();
        table.push(vec![
            p.attempt.to_string(),
            cause_word(p.cause, p.restores),
            p.version.clone(),
            p.owner.username.clone(),
            p.job.clone(),
            "-".to_owned(),
            "-".to_owned(),
            p.attempt_id.clone(),
            "-".to_owned(),
            format!("{label}: not reported by the installer yet"),
        ]);
        attempts.push(json!({
            "attempt": p.attempt, "attemptID": p.attempt_id, "version": p.version,
            "owner": p.owner.username, "job": p.job,
        }));
    }
    let empty = format!("{} has no attempts yet.", ws.name_any());
    Rendered {
        data: json!({
            "workspace": { "namespace": ws.namespace(), "name": ws.name_any() },
            "attempts": attempts,
        }),
        table: table.render(false),
        wide: table.render(true),
        names: vec![name_of(ws)],
        empty: Some(empty),
        headers: true,
        rows_at: Some("attempts"),
    }
}

/// Where the current attempt installs, from its sealed plan.
pub fn target(item: &Fetched<Workspace>) -> Rendered {
    let ws = &item.typed;
    let plan = ws.spec.plan.as_ref().map(|p| &p.plan);
    let mut table = Table::new(&[
        col("EDGE"),
        col("CLUSTER"),
        col("NAMESPACE"),
        col("RELEASE"),
        wide("EDGE WORKSPACE"),
        wide("ATTEMPT"),
        wide("JOB"),
    ]);
    let unsealed = "<not sealed>".to_owned();
    table.push(match plan {
        Some(p) => vec![
            p.edge_name.clone(),
            p.cluster.clone(),
            p.namespace.clone(),
            p.release.clone(),
            p.edge_workspace_uuid.clone(),
            p.attempt.to_string(),
            p.job.clone(),
        ],
        None => vec![
            ws.spec.edge.clone(),
            unsealed.clone(),
            unsealed.clone(),
            unsealed.clone(),
            unsealed.clone(),
            "-".to_owned(),
            "-".to_owned(),
        ],
    });
    let data = match plan {
        Some(p) => json!({
            "sealed": true,
            "edge": p.edge_name, "cluster": p.cluster, "namespace": p.namespace,
            "release": p.release, "edgeWorkspaceUUID": p.edge_workspace_uuid,
            "attempt": p.attempt, "job": p.job,
        }),
        None => json!({ "sealed": false, "edge": ws.spec.edge }),
    };
    Rendered {
        data,
        table: table.render(false),
        wide: table.render(true),
        names: vec![name_of(ws)],
        empty: None,
        headers: true,
        rows_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;
    use serde_json::Value;

    fn ws(status: Value) -> Fetched<Workspace> {
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
        let r = status_list(&[ws(failed())], false, "org-a", now());
        assert_eq!(
            r.table,
            "\
NAME   RECIPE    EDGE     VERSION   ATTEMPT   PHASE    AGE
demo   podinfo   edge-1   6.5.0     1         Failed   10m
"
        );
        let all = status_list(&[ws(failed())], true, "org-a", now());
        assert!(all.wide.starts_with("NAMESPACE   NAME"));
        assert!(all.wide.contains("Failed   alice   podinfo-demo-1"));
        assert_eq!(
            status_list(&[], false, "org-a", now()).empty.as_deref(),
            Some("No workspaces found in namespace org-a.")
        );
    }

    #[test]
    fn the_detail_says_what_to_do_next() {
        let r = status_detail(&ws(failed()), Some("org-a"), now());
        assert_eq!(
            r.table,
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
        let mut item = ws(raw);
        item.typed.spec.plan.as_mut().unwrap().plan.attempt = 2;
        item.typed.spec.plan.as_mut().unwrap().plan.job = "podinfo-demo-2".into();
        let r = history(&item);
        assert_eq!(
            r.table,
            "\
ATTEMPT   CAUSE   VERSION   OWNER   JOB              RESULT   FINISHED               MESSAGE
1         -       6.5.0     alice   podinfo-demo-1   Failed   2025-01-01T00:05:00Z   helm exited 1
2         -       6.5.0     alice   podinfo-demo-2   -        -                      Sealed: not reported by the installer yet
"
        );
        assert_eq!(r.data["attempts"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn target_comes_from_the_sealed_plan() {
        let r = target(&ws(json!({})));
        assert_eq!(
            r.table,
            "EDGE     CLUSTER     NAMESPACE   RELEASE\nedge-1   cluster-1   podinfo     podinfo\n"
        );
        assert_eq!(r.data["cluster"], "cluster-1");
        let mut unsealed = ws(json!({}));
        unsealed.typed.spec.plan = None;
        assert!(target(&unsealed).table.contains("<not sealed>"));
    }
}
