//! When `--wait` is done with a Workspace's current attempt, and what to say meanwhile.

use providers_shared::api::{JobResult, Workspace};

use super::{State, condition, state};

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

/// `head`, followed by the reason and the message where there are any.
fn detail(head: String, reason: &str, message: &str) -> String {
    match (reason.is_empty(), message.is_empty()) {
        (true, true) => head,
        (false, true) => format!("{head}: {reason}"),
        (true, false) => format!("{head}: {message}"),
        (false, false) => format!("{head}: {reason}: {message}"),
    }
}
