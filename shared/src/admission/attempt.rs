//! Attempt state read from a Workspace: active, fenced, what changed, what starts next.

use serde_json::{Map, Value};

use crate::api::{JobResult, Plan, Workspace, WorkspaceSpec};

/// An attempt is active when a plan is sealed and the status records no terminal result
/// for that attempt. A stored plan older than the attempt the installer recorded (written
/// while the webhooks were bypassed) is never run, so it is not active either. The CRD's
/// CEL rules encode the same definition.
pub fn is_active(workspace: &Workspace) -> bool {
    let Some(sealed) = &workspace.spec.plan else {
        return false;
    };
    let superseded = workspace
        .status
        .as_ref()
        .and_then(|s| s.attempt)
        .is_some_and(|recorded| recorded > sealed.plan.attempt);
    !superseded && terminal_result(workspace, &sealed.plan).is_none()
}

/// The terminal result recorded for the sealed attempt's number. The CRD's CEL rules
/// use the same definition, so the webhook and the API server agree on what is active.
pub fn terminal_result(workspace: &Workspace, plan: &Plan) -> Option<JobResult> {
    let status = workspace.status.as_ref()?;
    if status.attempt != Some(plan.attempt) {
        return None;
    }
    status.job_result
}

/// The terminal result the installer recorded for this very plan: its number and its ID.
/// A stored plan that merely reuses the number of a recorded attempt (a replay) has no
/// result of its own, so it can never be retried.
pub fn recorded_result(workspace: &Workspace, plan: &Plan) -> Option<JobResult> {
    let status = workspace.status.as_ref()?;
    if status.attempt_id.as_deref() != Some(plan.attempt_id.as_str()) {
        return None;
    }
    terminal_result(workspace, plan)
}

/// Whether the installer found the installed release drifted from its plan: a raised
/// spec.retry then repairs it with the same plan.
pub fn is_drifted(workspace: &Workspace) -> bool {
    workspace
        .status
        .as_ref()
        .is_some_and(|s| s.drift.is_some() && s.job_result == Some(JobResult::Succeeded))
}

/// Deletion fences new attempts: from the deletion timestamp, or the installer's record.
pub fn is_fenced(workspace: &Workspace) -> bool {
    workspace.metadata.deletion_timestamp.is_some()
        || workspace.status.as_ref().is_some_and(|s| s.deleting)
}

/// The first intent field that differs, in the order a user thinks of them.
pub fn changed_intent(old: &WorkspaceSpec, new: &WorkspaceSpec) -> Option<&'static str> {
    if old.recipe != new.recipe {
        Some("recipe")
    } else if old.edge != new.edge {
        Some("edge")
    } else if old.version != new.version {
        Some("version")
    } else if values_of(old) != values_of(new) {
        Some("values")
    } else {
        None
    }
}

/// `values` left out and `values: {}` mean the same intent.
fn values_of(spec: &WorkspaceSpec) -> Value {
    spec.values
        .clone()
        .unwrap_or_else(|| Value::Object(Map::new()))
}

/// The retry counter, 0 when left out.
pub fn retry_of(spec: &WorkspaceSpec) -> i64 {
    spec.retry.unwrap_or(0)
}
