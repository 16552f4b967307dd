//! A create that carries spec.plan: a Workspace applied from a backup or an export
//! (`kubectl get -o yaml`), or a plan copied from another Workspace (ADR 41).
//!
//! The carried plan is untrusted input from whoever applies it: it is never verified into
//! trust, signed again or run. A create seals attempt 1 from the Workspace's intent
//! (recipe, edge, version, values) under today's Recipe and Edge, as the requesting user
//! may (`install` onto the edge, `use` the Recipe), exactly as a create without a plan; the
//! carried plan is replaced.
//! The requester is told so in a warning.

use crate::api::Workspace;

use super::super::{Operation, Request};

/// The warning for a create whose request carries a plan, which the webhook replaces.
pub fn carried_plan_warning(request: &Request<'_>) -> Option<String> {
    if request.operation != Operation::Create || request.object.spec.plan.is_none() {
        return None;
    }
    Some(format!(
        "spec.plan: the plan this create carries was not used: a plan is sealed for one Workspace UID, and {} is a new Workspace, so the webhook sealed attempt 1 for it from spec.recipe, spec.edge, spec.version and spec.values, as {}. A release this Workspace's name already has on the edge is upgraded in place once the installer's orphan sweep has released it (docs/operations.md, \"Restoring the hub from a backup\")",
        key(request.object),
        crate::text::quoted(request.user.username.as_deref().unwrap_or_default()),
    ))
}

fn key(workspace: &Workspace) -> String {
    crate::text::quoted(&format!(
        "{}/{}",
        workspace.metadata.namespace.as_deref().unwrap_or_default(),
        workspace.metadata.name.as_deref().unwrap_or_default()
    ))
}
