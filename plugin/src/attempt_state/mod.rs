//! Where a Workspace's current attempt stands, read only from the Workspace; plain
//! functions. What the user can do next, when `--wait` is done and which attempts may be
//! sealed again follow from it, in the modules below.

pub mod next_steps;
pub mod retry_rules;
#[cfg(test)]
mod tests;
pub mod wait_outcome;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use providers_shared::api::{JobResult, Phase, Workspace};

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

/// The drift the installer found in the installed release, while it lasts.
pub fn drift(ws: &Workspace) -> Option<&providers_shared::api::Drift> {
    ws.status.as_ref().and_then(|s| s.drift.as_ref())
}
