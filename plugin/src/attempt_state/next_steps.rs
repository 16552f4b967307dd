//! What the user can do next with a Workspace, as sentences with the commands to run.

use providers_shared::api::{JobResult, Workspace};

use super::{State, condition, drift, state};
use crate::object_names::namespace_suffix;

/// What the user can do next, as sentences with the commands to run. `namespace_flag` is
/// the `-n` the user gave, repeated in the commands so they can be pasted.
pub fn next_steps(ws: &Workspace, name: &str, namespace_flag: Option<&str>) -> Vec<String> {
    let ns = namespace_suffix(namespace_flag);
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
