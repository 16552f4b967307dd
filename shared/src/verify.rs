//! What a valid sealed plan is: the one definition the webhook, the installer and
//! `kubectl provider plan --verify` all apply.
//!
//! A plan is valid for a Workspace when its seal verifies with a published key, it was not
//! sealed for a dry run, and it is bound to that very Workspace: its namespace and name,
//! and its UID. A first attempt sealed at creation carries no UID (the API server assigns
//! it after mutating admission); such a plan is valid only for a Workspace created within
//! [`CREATION_TOLERANCE`] of the seal, so a plan kept from an earlier Workspace of the same
//! name, or from a create that never happened, cannot start a later one.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::{
    api::SealedPlan,
    seal::{Keyring, SealError},
    text::{object_key, shown},
};

/// How far apart a UID-less plan's seal and its Workspace's creation may be. Mutating
/// admission runs milliseconds before the API server stamps the creation time; the rest
/// is room for clock skew between the webhook and the API server.
pub const CREATION_TOLERANCE: SignedDuration = SignedDuration::from_secs(60);

/// The Workspace a plan is checked against.
#[derive(Clone, Copy, Debug, Default)]
pub struct Binding<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    /// Empty while the Workspace has no UID yet (mutating admission of a create).
    pub uid: &'a str,
    /// `metadata.creationTimestamp`, when the Workspace has one.
    pub created: Option<Timestamp>,
    /// The plan is checked in a dry-run request: a plan sealed for a dry run is what that
    /// request should carry. Everywhere else such a plan is refused.
    pub dry_run: bool,
}

/// Why a sealed plan is not valid for a Workspace. The Display text is what a user sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanDefect {
    #[error("{0}")]
    Seal(SealError),
    #[error(
        "attempt {attempt} was sealed for a server-side dry run; such a plan is shown, never run"
    )]
    DryRun { attempt: i64 },
    #[error(
        "the plan was sealed for Workspace {sealed_for}, not {this}: a plan cannot be copied between Workspaces"
    )]
    OtherWorkspace { sealed_for: String, this: String },
    #[error("the plan's organization {org} is not the Workspace's namespace {namespace}")]
    OtherOrganization { org: String, namespace: String },
    #[error(
        "the plan was sealed for the Workspace with UID {sealed_for}, and this one has UID {this}: a plan of a deleted Workspace of the same name is never run"
    )]
    OtherUid { sealed_for: String, this: String },
    #[error(
        "attempt {attempt} is sealed without the Workspace's UID; only a first attempt, sealed at creation, may omit it"
    )]
    UidMissing { attempt: i64 },
    #[error(
        "attempt 1 is sealed without the Workspace's UID and without a seal time, so it cannot be tied to this Workspace's creation"
    )]
    SealTimeMissing,
    #[error(
        "attempt 1 was sealed at {sealed_at}, but the Workspace was created at {created}: a plan sealed for another creation (a dry run, or an earlier Workspace of the same name) is never run"
    )]
    SealedForAnotherCreation { sealed_at: String, created: String },
    #[error("attempt {attempt} is not a valid attempt number")]
    BadAttempt { attempt: i64 },
}

/// Checks a sealed plan against the published keys and the Workspace it is stored in.
pub fn verify_plan(
    sealed: &SealedPlan,
    keyring: &Keyring,
    workspace: &Binding<'_>,
) -> Result<(), PlanDefect> {
    keyring.verify(sealed).map_err(PlanDefect::Seal)?;
    check_binding(sealed, workspace)
}

/// The checks of [`verify_plan`] after the signature: for a caller that verified the seal
/// of this very plan already.
pub fn check_binding(sealed: &SealedPlan, workspace: &Binding<'_>) -> Result<(), PlanDefect> {
    let plan = &sealed.plan;
    if plan.attempt < 1 {
        return Err(PlanDefect::BadAttempt {
            attempt: plan.attempt,
        });
    }
    if plan.dry_run && !workspace.dry_run {
        return Err(PlanDefect::DryRun {
            attempt: plan.attempt,
        });
    }
    if plan.workspace.namespace != workspace.namespace || plan.workspace.name != workspace.name {
        return Err(PlanDefect::OtherWorkspace {
            sealed_for: object_key(
                &shown(&plan.workspace.namespace),
                &shown(&plan.workspace.name),
            ),
            this: object_key(workspace.namespace, workspace.name),
        });
    }
    if plan.org != workspace.namespace {
        return Err(PlanDefect::OtherOrganization {
            org: shown(&plan.org),
            namespace: workspace.namespace.to_owned(),
        });
    }
    if !plan.workspace.uid.is_empty() {
        if !workspace.uid.is_empty() && plan.workspace.uid != workspace.uid {
            return Err(PlanDefect::OtherUid {
                sealed_for: shown(&plan.workspace.uid),
                this: workspace.uid.to_owned(),
            });
        }
        return Ok(());
    }
    if plan.attempt != 1 {
        return Err(PlanDefect::UidMissing {
            attempt: plan.attempt,
        });
    }
    let Some(sealed_at) = plan.sealed_at.as_ref().map(|t| t.0) else {
        return Err(PlanDefect::SealTimeMissing);
    };
    if let Some(created) = workspace.created {
        let apart = created.duration_since(sealed_at).abs();
        if apart > CREATION_TOLERANCE {
            return Err(PlanDefect::SealedForAnotherCreation {
                sealed_at: sealed_at.to_string(),
                created: created.to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
