//! Which PlanValues objects are no longer needed: rule `unused_values_are_swept`.
//!
//! An object is needed while its Workspace's sealed plan or one of its kept plans refers to
//! its digest, and for [`GRACE`] after a plan referring to it was last sealed (the webhook
//! writes it before the Workspace write is stored, and the installer's cache sees that
//! write a moment later, or never, when the API server refused it).

use std::collections::BTreeSet;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::api::Workspace;

use super::{Source, object_name, source_of};

/// How long after it was last sealed an object is kept whatever refers to it, unless the
/// installer is told otherwise (`--plan-values-grace`).
pub const GRACE: SignedDuration = SignedDuration::from_secs(10 * 60);

/// A PlanValues object as a metadata-only list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredValues {
    pub name: String,
    /// The Workspace it was written for (its annotation).
    pub workspace: String,
    /// The UIDs of its owners.
    pub owners: Vec<String>,
    /// When a plan referring to it was last sealed, else when it was created.
    pub last_sealed: Option<Timestamp>,
}

/// What becomes of one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    Delete,
    /// Its Workspace is not in this installer's watch cache: keep it if a Workspace of
    /// that name exists on the hub and is its owner (or it has none yet), else delete it.
    DeleteUnlessOwnerExists,
}

/// The names of the PlanValues objects `workspace` refers to: its sealed plan's and its
/// kept plans'.
pub fn referenced(workspace: &Workspace) -> BTreeSet<String> {
    let name = workspace.metadata.name.as_deref().unwrap_or_default();
    let kept = workspace
        .status
        .iter()
        .flat_map(|status| &status.attempts)
        .filter_map(|record| record.kept.as_ref().map(|kept| &kept.plan.plan));
    workspace
        .spec
        .plan
        .iter()
        .map(|sealed| &sealed.plan)
        .chain(kept)
        .filter_map(|plan| match source_of(plan) {
            Source::Stored { digest } => Some(object_name(name, digest)),
            Source::Inline(_) => None,
        })
        .collect()
}

/// Rule `unused_values_are_swept`: `cached` is the Workspace of that name in this installer's
/// watch cache, if any. An object of a Workspace not in it (another shard's, or one deleted) is
/// judged by whether that Workspace exists: the garbage collector would delete it too, and
/// this does not depend on it running.
pub fn verdict(
    stored: &StoredValues,
    cached: Option<&Workspace>,
    now: Timestamp,
    grace: SignedDuration,
) -> Verdict {
    if stored
        .last_sealed
        .is_none_or(|at| now.duration_since(at) < grace)
    {
        return Verdict::Keep;
    }
    match cached {
        Some(workspace) => {
            let uid = workspace.metadata.uid.as_deref().unwrap_or_default();
            let ours = stored.owners.is_empty() || stored.owners.iter().any(|o| o == uid);
            if !ours {
                // An earlier Workspace of the same name's.
                Verdict::DeleteUnlessOwnerExists
            } else if referenced(workspace).contains(&stored.name) {
                Verdict::Keep
            } else {
                Verdict::Delete
            }
        }
        None => Verdict::DeleteUnlessOwnerExists,
    }
}
