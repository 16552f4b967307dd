//! Whether `retry`, `repair` and `rollback` may seal an attempt now; when not, why and what
//! to do instead.

use providers_shared::api::Workspace;

use super::{State, drift, state};

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
        State::Deleting => Err(being_deleted(name)),
        other => Err(no_result_yet(
            &other,
            name,
            "only a failed attempt can be retried",
        )),
    }
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
        State::Deleting => return Err(being_deleted(name)),
        other => return Err(no_result_yet(&other, name, "a rollback waits for it")),
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
        Some(attempt) if kept.contains(&attempt) => Ok(attempt),
        Some(attempt) => Err((
            format!(
                "attempt {attempt} of {name} has no kept plan to roll back to (kept: {kept:?})"
            ),
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

/// Why no new attempt may start for a Workspace being deleted, and what to do instead.
fn being_deleted(name: &str) -> (String, String) {
    (
        format!("{name} is being deleted: no new attempt may start"),
        "install it again under a new name once it is gone".to_owned(),
    )
}

/// The refusal while the current attempt has no result yet; `consequence` says what that
/// means for the command asked.
fn no_result_yet(current: &State, name: &str, consequence: &str) -> (String, String) {
    (
        format!(
            "attempt {} of {name} has no result yet ({}): {consequence}",
            current.attempt().unwrap_or_default(),
            current.label()
        ),
        format!("wait for its result: kubectl provider status {name} --wait"),
    )
}
