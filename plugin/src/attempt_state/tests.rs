use serde_json::json;

use super::{
    next_steps::next_steps,
    retry_rules::retry_allowed,
    wait_outcome::{Wait, wait_outcome},
    *,
};

fn workspace_with(spec_plan_attempt: Option<i64>, status: serde_json::Value) -> Workspace {
    let mut object = json!({
        "apiVersion": "providers.platform.dev/v1alpha1",
        "kind": "Workspace",
        "metadata": { "name": "demo", "namespace": "org-a" },
        "spec": { "recipe": "podinfo", "edge": "edge-1" },
        "status": status,
    });
    if let Some(attempt) = spec_plan_attempt {
        object["spec"]["plan"] = crate::testdata::plan_json(attempt);
    }
    serde_json::from_value(object).unwrap()
}

fn condition_json(type_: &str, status: &str, reason: &str, message: &str) -> serde_json::Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": "2025-01-01T00:00:00Z"})
}

#[test]
fn without_a_plan_the_workspace_is_unsealed() {
    let workspace = workspace_with(None, json!({}));
    assert_eq!(state(&workspace), State::Unsealed);
    assert!(matches!(wait_outcome(&workspace), Wait::Waiting(_)));
    assert!(next_steps(&workspace, "demo", None)[1].contains("webhook is not running"));
}

#[test]
fn a_status_about_an_older_attempt_does_not_count() {
    // Attempt 1 failed; a retry sealed attempt 2 the installer has not seen yet.
    let workspace = workspace_with(
        Some(2),
        json!({"phase": "Failed", "attempt": 1, "jobResult": "Failed"}),
    );
    assert_eq!(state(&workspace), State::Sealed { attempt: 2 });
    assert!(
        matches!(wait_outcome(&workspace), Wait::Waiting(message) if message.contains("attempt 2 sealed"))
    );
}

#[test]
fn a_job_result_decides_success_and_failure() {
    let ok = workspace_with(
        Some(1),
        json!({"phase": "Succeeded", "attempt": 1, "jobResult": "Succeeded"}),
    );
    assert_eq!(state(&ok), State::Succeeded { attempt: 1 });
    assert_eq!(
        wait_outcome(&ok),
        Wait::Ready("attempt 1 succeeded".to_owned())
    );

    let failed = workspace_with(
        Some(1),
        json!({"phase": "Failed", "attempt": 1, "jobResult": "Failed",
               "conditions": [condition_json("Failed", "True", "JobFailed", "helm exited 1: timed out")]}),
    );
    assert_eq!(
        wait_outcome(&failed),
        Wait::Failed("attempt 1 failed: helm exited 1: timed out".to_owned())
    );
    assert!(
        next_steps(&failed, "demo", Some("org-a"))[1]
            .ends_with("kubectl provider retry demo -n org-a")
    );
}

#[test]
fn a_failure_message_falls_back_to_the_attempt_record() {
    let workspace = workspace_with(
        Some(1),
        json!({"attempt": 1, "jobResult": "Rejected",
               "attempts": [{"attempt": 1, "attemptID": "a", "version": "1", "owner": "alice",
                             "job": "j", "result": "Rejected", "message": "namespace owned by another workspace"}]}),
    );
    assert_eq!(
        wait_outcome(&workspace),
        Wait::Failed(
            "attempt 1 was refused by the installer: namespace owned by another workspace"
                .to_owned()
        )
    );
    assert_eq!(state(&workspace).label(), "Rejected");
    assert!(next_steps(&workspace, "demo", None)[0].contains("nothing ran"));
}

#[test]
fn running_and_pending_say_what_they_wait_for() {
    let running = workspace_with(
        Some(1),
        json!({"phase": "Progressing", "attempt": 1, "job": "podinfo-demo-1",
               "conditions": [condition_json("Ready", "False", "JobRunning", "helm is installing")]}),
    );
    assert_eq!(
        wait_outcome(&running),
        Wait::Waiting(
            "attempt 1 running (job podinfo-demo-1): JobRunning: helm is installing".to_owned()
        )
    );
    let pending = workspace_with(
        Some(1),
        json!({"phase": "Pending", "attempt": 1,
               "conditions": [condition_json("Ready", "False", "EdgeNotReady", "edge-1 does not answer")]}),
    );
    assert!(next_steps(&pending, "demo", None)[0].starts_with("Edge edge-1 is not ready"));
}

#[test]
fn deletion_ends_a_wait() {
    let workspace = workspace_with(Some(1), json!({"attempt": 1, "deleting": true}));
    assert_eq!(state(&workspace), State::Deleting);
    assert!(matches!(wait_outcome(&workspace), Wait::Failed(_)));
}

#[test]
fn retry_is_for_failed_attempts_only() {
    let failed = workspace_with(Some(1), json!({"attempt": 1, "jobResult": "Failed"}));
    assert_eq!(retry_allowed(&failed, "demo"), Ok(()));
    let rejected = workspace_with(Some(1), json!({"attempt": 1, "jobResult": "Rejected"}));
    assert_eq!(retry_allowed(&rejected, "demo"), Ok(()));

    let ok = workspace_with(Some(1), json!({"attempt": 1, "jobResult": "Succeeded"}));
    let (message, hint) = retry_allowed(&ok, "demo").unwrap_err();
    assert_eq!(
        message,
        "attempt 1 of demo succeeded: there is nothing to retry"
    );
    assert!(hint.contains("kubectl provider set demo"));

    let running = workspace_with(Some(2), json!({"attempt": 2, "phase": "Progressing"}));
    let (message, _) = retry_allowed(&running, "demo").unwrap_err();
    assert_eq!(
        message,
        "attempt 2 of demo has no result yet (Progressing): only a failed attempt can be retried"
    );
    // A retry already asked for: the new attempt is sealed, the old failure no longer counts.
    let retried = workspace_with(Some(2), json!({"attempt": 1, "jobResult": "Failed"}));
    assert!(retry_allowed(&retried, "demo").is_err());
}
