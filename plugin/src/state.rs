//! Where a Workspace's current attempt stands, what the user can do next, and when
//! `--wait` is done. Read only from the Workspace; plain functions.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use providers::api::{JobResult, Phase, Workspace};

/// The state of the current attempt, as the user needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// No plan is sealed: the webhook has not processed the Workspace.
    Unsealed,
    /// Attempt `attempt` is sealed; the installer has not reported on it yet.
    Sealed { attempt: i64 },
    /// The installer knows the attempt but has not started its Job (for example the edge is
    /// not Ready).
    Pending {
        attempt: i64,
        reason: String,
        message: String,
    },
    /// The attempt's Job runs on the edge.
    Running { attempt: i64, job: String },
    /// The attempt's Job completed.
    Succeeded { attempt: i64 },
    /// The attempt's Job failed, or the installer refused to run it.
    Failed {
        attempt: i64,
        result: JobResult,
        message: String,
    },
    /// The Workspace is being deleted.
    Deleting,
}

impl State {
    /// The word in the PHASE column.
    pub fn label(&self) -> &'static str {
        match self {
            State::Unsealed => "Unsealed",
            State::Sealed { .. } => "Sealed",
            State::Pending { .. } => "Pending",
            State::Running { .. } => "Progressing",
            State::Succeeded { .. } => "Succeeded",
            State::Failed {
                result: JobResult::Rejected,
                ..
            } => "Rejected",
            State::Failed { .. } => "Failed",
            State::Deleting => "Deleting",
        }
    }

    /// The attempt this state is about.
    pub fn attempt(&self) -> Option<i64> {
        match self {
            State::Unsealed | State::Deleting => None,
            State::Sealed { attempt }
            | State::Pending { attempt, .. }
            | State::Running { attempt, .. }
            | State::Succeeded { attempt }
            | State::Failed { attempt, .. } => Some(*attempt),
        }
    }
}

/// A condition of the Workspace's status by type.
pub fn condition<'a>(ws: &'a Workspace, type_: &str) -> Option<&'a Condition> {
    ws.status.as_ref()?.condition(type_)
}

/// The state of the Workspace's current attempt.
///
/// The status describes the sealed attempt only when its `attempt` matches the plan's:
/// right after a retry or an upgrade, the status still tells of the previous attempt, and
/// that old result must not be mistaken for the new one's.
pub fn state(ws: &Workspace) -> State {
    let status = ws.status.as_ref();
    if ws.metadata.deletion_timestamp.is_some()
        || status.is_some_and(|s| s.deleting || s.phase == Some(Phase::Deleting))
    {
        return State::Deleting;
    }
    let Some(plan) = &ws.spec.plan else {
        return State::Unsealed;
    };
    let attempt = plan.plan.attempt;
    let Some(status) = status.filter(|s| s.attempt == Some(attempt)) else {
        return State::Sealed { attempt };
    };
    let failure_message = || {
        condition(ws, "Failed")
            .filter(|c| c.status == "True")
            .map(|c| c.message.clone())
            .or_else(|| {
                status
                    .attempts
                    .iter()
                    .rev()
                    .find(|a| a.attempt == attempt)
                    .and_then(|a| a.message.clone())
            })
            .or_else(|| condition(ws, "Ready").map(|c| c.message.clone()))
            .unwrap_or_default()
    };
    match (status.job_result, status.phase) {
        (Some(JobResult::Succeeded), _) | (None, Some(Phase::Succeeded)) => {
            State::Succeeded { attempt }
        }
        (Some(result @ (JobResult::Failed | JobResult::Rejected)), _) => State::Failed {
            attempt,
            result,
            message: failure_message(),
        },
        (None, Some(Phase::Failed)) => State::Failed {
            attempt,
            result: JobResult::Failed,
            message: failure_message(),
        },
        (None, Some(Phase::Progressing)) => State::Running {
            attempt,
            job: status.job.clone().unwrap_or_else(|| plan.plan.job.clone()),
        },
        (None, Some(Phase::Pending)) => {
            let why = condition(ws, "Ready").or_else(|| condition(ws, "Progressing"));
            State::Pending {
                attempt,
                reason: why.map(|c| c.reason.clone()).unwrap_or_default(),
                message: why.map(|c| c.message.clone()).unwrap_or_default(),
            }
        }
        _ => State::Sealed { attempt },
    }
}

/// What the user can do next, as sentences with the commands to run. `namespace_flag` is
/// the `-n` the user gave, repeated in the commands so they can be pasted.
pub fn next_steps(ws: &Workspace, name: &str, namespace_flag: Option<&str>) -> Vec<String> {
    let ns = namespace_flag
        .map(|n| format!(" -n {n}"))
        .unwrap_or_default();
    let follow = format!("kubectl provider status {name}{ns} --wait");
    match state(ws) {
        State::Unsealed => vec![
            "No plan is sealed yet: the admission webhook seals one when the Workspace is created or changed.".to_owned(),
            "If this stays, the webhook is not running: ask the platform team.".to_owned(),
        ],
        State::Sealed { attempt } => vec![format!(
            "Attempt {attempt} is sealed and waits for the installer to start it. Follow it: {follow}"
        )],
        State::Pending {
            attempt, reason, ..
        } if reason == "EdgeNotReady" => vec![format!(
            "Edge {} is not ready: attempt {attempt} starts when it connects. Nothing to do here; \
             ask the platform team if it stays. Follow it: {follow}",
            ws.spec.edge
        )],
        State::Pending { attempt, .. } => vec![format!(
            "Attempt {attempt} is waiting to start. Follow it: {follow}"
        )],
        State::Running { attempt, job } => vec![
            format!(
                "Attempt {attempt} is running as Job {job} on edge {}. Follow it: {follow}",
                ws.spec.edge
            ),
            "Recipe, edge, version and values are pinned until it has a result.".to_owned(),
        ],
        State::Succeeded { attempt } if drift(ws).is_some() => vec![
            format!(
                "Attempt {attempt} was installed, and its release has changed on the edge since (see Drifted above)."
            ),
            format!(
                "To install its plan again: kubectl provider repair {name}{ns}. To go back to an earlier one: kubectl provider rollback {name}{ns}."
            ),
        ],
        State::Succeeded { attempt } => vec![format!(
            "Installed. To change values: kubectl provider set {name}{ns} --set PATH=VALUE \
             (starts attempt {}).",
            attempt + 1
        )],
        State::Failed {
            attempt,
            result: JobResult::Rejected,
            ..
        } if condition(ws, "Failed").is_some_and(|c| c.reason == "SealInvalid") => vec![
            format!("The installer refused attempt {attempt}'s plan for its seal; nothing ran on the edge."),
            format!(
                "Such a plan is never run nor retried: change the recipe, edge, version or values (kubectl provider set {name}{ns} ...) to seal a new attempt."
            ),
        ],
        State::Failed {
            attempt,
            result: JobResult::Rejected,
            ..
        } => vec![
            format!("The installer refused to run attempt {attempt}; nothing ran on the edge."),
            format!(
                "Once the cause in the message is fixed, run the same plan again: kubectl provider retry {name}{ns}"
            ),
        ],
        State::Failed { attempt, .. } => vec![
            format!("Attempt {attempt} failed. See every attempt: kubectl provider history {name}{ns}"),
            format!("Run the same pinned plan again: kubectl provider retry {name}{ns}"),
        ],
        State::Deleting => vec![
            "Being deleted: no new attempt starts. The Helm release, its namespace and the \
             provider's credential stay on the edge."
                .to_owned(),
        ],
    }
}

/// What deleting the Workspace does on its edge, in a line: whether it waits for the
/// edge, finishes without it, or was abandoned by the platform.
pub fn on_delete(ws: &Workspace, name: &str, namespace_flag: Option<&str>) -> String {
    let ns = namespace_flag
        .map(|n| format!(" -n {n}"))
        .unwrap_or_default();
    let status = ws.status.clone().unwrap_or_default();
    let edge = status
        .target
        .as_ref()
        .map(|t| t.edge.clone())
        .unwrap_or_else(|| ws.spec.edge.clone());
    if let Some(reason) = providers::installer::delete::abandoned(ws) {
        return format!(
            "finishes without edge {edge}: abandoned by the platform ({})",
            providers::text::shown(reason)
        );
    }
    if !providers::installer::delete::edge_touched(&status) {
        return format!("finishes at once: nothing was prepared on edge {edge}");
    }
    format!(
        "finishes once the installer has cleaned up on edge {edge}, waiting while it is unreachable; if it is gone for good, a platform admin can abandon it (kubectl provider delete {name}{ns} --abandon)"
    )
}

/// Whether `--wait` is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Ready: the attempt succeeded.
    Ready(String),
    /// The attempt failed or cannot finish.
    Failed(String),
    /// Still going; the text says where it is.
    Waiting(String),
}

/// The `--wait` outcome for a Workspace.
pub fn wait_outcome(ws: &Workspace) -> Wait {
    match state(ws) {
        State::Succeeded { attempt } => Wait::Ready(format!("attempt {attempt} succeeded")),
        State::Failed {
            attempt,
            result,
            message,
        } => {
            let what = match result {
                JobResult::Rejected => "was refused by the installer",
                _ => "failed",
            };
            Wait::Failed(if message.is_empty() {
                format!("attempt {attempt} {what}")
            } else {
                format!("attempt {attempt} {what}: {message}")
            })
        }
        State::Deleting => Wait::Failed("the Workspace is being deleted".to_owned()),
        State::Unsealed => Wait::Waiting("waiting for the webhook to seal the plan".to_owned()),
        State::Sealed { attempt } => Wait::Waiting(format!(
            "attempt {attempt} sealed, waiting for the installer"
        )),
        State::Pending {
            attempt,
            reason,
            message,
        } => Wait::Waiting(detail(
            format!("attempt {attempt} pending"),
            &reason,
            &message,
        )),
        State::Running { attempt, job } => {
            let ready = condition(ws, "Ready");
            Wait::Waiting(detail(
                format!("attempt {attempt} running (job {job})"),
                ready.map(|c| c.reason.as_str()).unwrap_or(""),
                ready.map(|c| c.message.as_str()).unwrap_or(""),
            ))
        }
    }
}

fn detail(head: String, reason: &str, message: &str) -> String {
    match (reason.is_empty(), message.is_empty()) {
        (true, true) => head,
        (false, true) => format!("{head}: {reason}"),
        (true, false) => format!("{head}: {message}"),
        (false, false) => format!("{head}: {reason}: {message}"),
    }
}

/// Whether `retry` may ask for a new attempt now; the error says why not and what to do.
pub fn retry_allowed(ws: &Workspace, name: &str) -> Result<(), (String, String)> {
    match state(ws) {
        State::Failed { .. } => Ok(()),
        // A raised retry repairs a drifted release.
        State::Succeeded { .. } if drift(ws).is_some() => Ok(()),
        State::Succeeded { attempt } => Err((
            format!("attempt {attempt} of {name} succeeded: there is nothing to retry"),
            format!("to change it, set new values: kubectl provider set {name} --set PATH=VALUE"),
        )),
        State::Unsealed => Err((
            format!("{name} has no sealed attempt to retry"),
            "the admission webhook seals the plan; see kubectl provider status".to_owned(),
        )),
        State::Deleting => Err((
            format!("{name} is being deleted: no new attempt may start"),
            "install it again under a new name once it is gone".to_owned(),
        )),
        other => Err((
            format!(
                "attempt {} of {name} has no result yet ({}): only a failed attempt can be retried",
                other.attempt().unwrap_or_default(),
                other.label()
            ),
            format!("wait for its result: kubectl provider status {name} --wait"),
        )),
    }
}

/// The drift the installer found in the installed release, while it lasts.
pub fn drift(ws: &Workspace) -> Option<&providers::api::Drift> {
    ws.status.as_ref().and_then(|s| s.drift.as_ref())
}

/// Whether `repair NAME` may seal the installed plan again: its release has drifted.
pub fn repair_allowed(ws: &Workspace, name: &str) -> Result<(), (String, String)> {
    match state(ws) {
        State::Succeeded { .. } if drift(ws).is_some() => Ok(()),
        State::Succeeded { attempt } => Err((
            format!(
                "the release of attempt {attempt} of {name} is as the installer left it: there is nothing to repair"
            ),
            format!(
                "the installer checks it for drift; kubectl provider status {name} shows the Drifted condition"
            ),
        )),
        State::Failed { attempt, .. } => Err((
            format!("attempt {attempt} of {name} failed: there is no installed release to repair"),
            format!("run its plan again: kubectl provider retry {name}"),
        )),
        _ => retry_allowed(ws, name),
    }
}

/// The attempt `rollback NAME [--to-attempt N]` seals again: N, or the newest attempt
/// older than the current one whose plan the installer kept. Only between attempts.
pub fn rollback_target(
    ws: &Workspace,
    name: &str,
    to: Option<i64>,
) -> Result<i64, (String, String)> {
    let current = match state(ws) {
        State::Succeeded { attempt } | State::Failed { attempt, .. } => attempt,
        State::Deleting => {
            return Err((
                format!("{name} is being deleted: no new attempt may start"),
                "install it again under a new name once it is gone".to_owned(),
            ));
        }
        other => {
            return Err((
                format!(
                    "attempt {} of {name} has no result yet ({}): a rollback waits for it",
                    other.attempt().unwrap_or_default(),
                    other.label()
                ),
                format!("wait for its result: kubectl provider status {name} --wait"),
            ));
        }
    };
    let kept: Vec<i64> = ws
        .status
        .iter()
        .flat_map(|s| &s.attempts)
        .filter(|a| a.kept.is_some())
        .map(|a| a.attempt)
        .collect();
    let history = format!(
        "kubectl provider history {name} lists the attempts and which can be rolled back to"
    );
    match to {
        Some(n) if kept.contains(&n) => Ok(n),
        Some(n) => Err((
            format!("attempt {n} of {name} has no kept plan to roll back to (kept: {kept:?})"),
            history,
        )),
        None => kept
            .iter()
            .rev()
            .copied()
            .find(|n| *n < current)
            .ok_or_else(|| {
                (
                    format!(
                        "{name} has no succeeded attempt before attempt {current} to roll back to"
                    ),
                    history,
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ws(spec_plan_attempt: Option<i64>, status: serde_json::Value) -> Workspace {
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

    fn cond(type_: &str, status: &str, reason: &str, message: &str) -> serde_json::Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": "2025-01-01T00:00:00Z"})
    }

    #[test]
    fn without_a_plan_the_workspace_is_unsealed() {
        let w = ws(None, json!({}));
        assert_eq!(state(&w), State::Unsealed);
        assert!(matches!(wait_outcome(&w), Wait::Waiting(_)));
        assert!(next_steps(&w, "demo", None)[1].contains("webhook is not running"));
    }

    #[test]
    fn a_status_about_an_older_attempt_does_not_count() {
        // Attempt 1 failed; a retry sealed attempt 2 the installer has not seen yet.
        let w = ws(
            Some(2),
            json!({"phase": "Failed", "attempt": 1, "jobResult": "Failed"}),
        );
        assert_eq!(state(&w), State::Sealed { attempt: 2 });
        assert!(matches!(wait_outcome(&w), Wait::Waiting(m) if m.contains("attempt 2 sealed")));
    }

    #[test]
    fn a_job_result_decides_success_and_failure() {
        let ok = ws(
            Some(1),
            json!({"phase": "Succeeded", "attempt": 1, "jobResult": "Succeeded"}),
        );
        assert_eq!(state(&ok), State::Succeeded { attempt: 1 });
        assert_eq!(
            wait_outcome(&ok),
            Wait::Ready("attempt 1 succeeded".to_owned())
        );

        let failed = ws(
            Some(1),
            json!({"phase": "Failed", "attempt": 1, "jobResult": "Failed",
                   "conditions": [cond("Failed", "True", "JobFailed", "helm exited 1: timed out")]}),
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
        let w = ws(
            Some(1),
            json!({"attempt": 1, "jobResult": "Rejected",
                   "attempts": [{"attempt": 1, "attemptID": "a", "version": "1", "owner": "alice",
                                 "job": "j", "result": "Rejected", "message": "namespace owned by another workspace"}]}),
        );
        assert_eq!(
            wait_outcome(&w),
            Wait::Failed(
                "attempt 1 was refused by the installer: namespace owned by another workspace"
                    .to_owned()
            )
        );
        assert_eq!(state(&w).label(), "Rejected");
        assert!(next_steps(&w, "demo", None)[0].contains("nothing ran"));
    }

    #[test]
    fn running_and_pending_say_what_they_wait_for() {
        let running = ws(
            Some(1),
            json!({"phase": "Progressing", "attempt": 1, "job": "podinfo-demo-1",
                   "conditions": [cond("Ready", "False", "JobRunning", "helm is installing")]}),
        );
        assert_eq!(
            wait_outcome(&running),
            Wait::Waiting(
                "attempt 1 running (job podinfo-demo-1): JobRunning: helm is installing".to_owned()
            )
        );
        let pending = ws(
            Some(1),
            json!({"phase": "Pending", "attempt": 1,
                   "conditions": [cond("Ready", "False", "EdgeNotReady", "edge-1 does not answer")]}),
        );
        assert!(next_steps(&pending, "demo", None)[0].starts_with("Edge edge-1 is not ready"));
    }

    #[test]
    fn deletion_ends_a_wait() {
        let w = ws(Some(1), json!({"attempt": 1, "deleting": true}));
        assert_eq!(state(&w), State::Deleting);
        assert!(matches!(wait_outcome(&w), Wait::Failed(_)));
    }

    #[test]
    fn retry_is_for_failed_attempts_only() {
        let failed = ws(Some(1), json!({"attempt": 1, "jobResult": "Failed"}));
        assert_eq!(retry_allowed(&failed, "demo"), Ok(()));
        let rejected = ws(Some(1), json!({"attempt": 1, "jobResult": "Rejected"}));
        assert_eq!(retry_allowed(&rejected, "demo"), Ok(()));

        let ok = ws(Some(1), json!({"attempt": 1, "jobResult": "Succeeded"}));
        let (message, hint) = retry_allowed(&ok, "demo").unwrap_err();
        assert_eq!(
            message,
            "attempt 1 of demo succeeded: there is nothing to retry"
        );
        assert!(hint.contains("kubectl provider set demo"));

        let running = ws(Some(2), json!({"attempt": 2, "phase": "Progressing"}));
        let (message, _) = retry_allowed(&running, "demo").unwrap_err();
        assert_eq!(
            message,
            "attempt 2 of demo has no result yet (Progressing): only a failed attempt can be retried"
        );
        // A retry already asked for: the new attempt is sealed, the old failure no longer counts.
        let retried = ws(Some(2), json!({"attempt": 1, "jobResult": "Failed"}));
        assert!(retry_allowed(&retried, "demo").is_err());
    }
}
