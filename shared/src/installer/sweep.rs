//! The orphan sweep: edge objects whose Workspace is gone from the hub.
//!
//! Deletion normally runs PrepareDelete before the Workspace goes. A Workspace can still
//! vanish without it: its finalizer forced off by someone allowed to, or the hub restored
//! from a backup. Then the attempt's runner identity (ServiceAccount, Role, RoleBinding,
//! values Secret) and its Job would stay on the edge, and the release namespace would never
//! be released. The installer lists its objects on each edge by their ownership label and
//! hands them here with the UIDs of the Workspaces that exist; what belongs to none of
//! them is removed as PrepareDelete would have: the identity and the Job go, the namespace
//! is released for a later Workspace of the same name, the release and the provider's
//! runtime credential stay.
//!
//! The edge objects must be listed before the Workspaces: an object made for a Workspace
//! created in between then belongs to a Workspace the second list holds.

use std::collections::{BTreeMap, HashSet};

use super::{
    action::{Deletion, Kind},
    names,
    observation::ObjectState,
    patch,
};

/// What the sweep looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    Namespace,
    Attempt(Kind),
}

/// An object the installer labelled, as listed on the edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedObject {
    pub found: Found,
    /// Empty for a namespace.
    pub namespace: String,
    pub name: String,
    pub object: ObjectState,
}

/// One step of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub enum SweepAction {
    /// Remove the installer's finalizer from an orphaned Job (the patch tests its UID).
    ReleaseJob {
        namespace: String,
        name: String,
        patch: json_patch::Patch,
    },
    /// Delete an orphaned attempt object, if it still has the listed UID.
    Delete(Deletion),
    /// Release an orphaned Workspace's namespace for a later Workspace of its name.
    ReleaseNamespace {
        name: String,
        patch: json_patch::Patch,
    },
}

/// What the sweep of one edge does, and for which gone Workspaces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sweep {
    pub actions: Vec<SweepAction>,
    /// Per gone Workspace UID (with its `<org>/<name>` when an object says), how many
    /// objects are removed or released.
    pub orphans: BTreeMap<String, (String, usize)>,
}

/// The sweep of one edge: `listed` are the objects carrying the installer's ownership
/// label there; `live` the UIDs of every Workspace on the hub.
pub fn sweep(listed: &[ListedObject], live: &HashSet<String>) -> Sweep {
    let mut sweep = Sweep::default();
    // Namespaces are released after every Job and identity is removed: a Workspace of the
    // same name that adopts a released namespace (a restored one, ADR 41) then finds none
    // of the lost attempt's objects in it.
    let mut releases = Vec::new();
    // Rule `sweep_acts_only_in_release_namespaces`: labels are anyone's to write, and the
    // installer may delete only in the namespaces it made (the edge's confinement policy),
    // so an attempt object counts only inside a namespace the installer labelled. One
    // planted elsewhere would be refused, and would hold up the sweep of the whole edge.
    let release_namespaces: HashSet<&str> = listed
        .iter()
        .filter(|item| item.found == Found::Namespace)
        .map(|item| item.name.as_str())
        .collect();
    for item in listed {
        let uid = item.object.label(names::LABEL_WORKSPACE_UID);
        if uid.is_empty() || live.contains(uid) || item.object.deleting {
            continue;
        }
        if item.found != Found::Namespace && !release_namespaces.contains(item.namespace.as_str()) {
            continue;
        }
        let before = sweep.actions.len() + releases.len();
        match item.found {
            Found::Namespace => {
                if item.object.label(names::LABEL_RELEASED) != "true" {
                    releases.push(SweepAction::ReleaseNamespace {
                        name: item.name.clone(),
                        patch: patch::release_namespace(&item.object, uid),
                    });
                }
            }
            // Only an attempt's objects carry its ID; the provider's runtime credential
            // (owned by the Workspace, not an attempt) stays, as PrepareDelete leaves it.
            Found::Attempt(_) if item.object.label(names::LABEL_ATTEMPT_ID).is_empty() => {}
            Found::Attempt(kind) => {
                if kind == Kind::Job
                    && let Some(patch) = patch::remove_finalizer(&item.object)
                {
                    sweep.actions.push(SweepAction::ReleaseJob {
                        namespace: item.namespace.clone(),
                        name: item.name.clone(),
                        patch,
                    });
                }
                sweep.actions.push(SweepAction::Delete(Deletion {
                    kind,
                    namespace: item.namespace.clone(),
                    name: item.name.clone(),
                    uid: item.object.uid.clone(),
                }));
            }
        }
        if sweep.actions.len() + releases.len() > before {
            let key = item
                .object
                .annotations
                .get(names::ANNOTATION_WORKSPACE)
                .cloned()
                .unwrap_or_default();
            let entry = sweep.orphans.entry(uid.to_owned()).or_insert((key, 0));
            entry.1 += 1;
        }
    }
    sweep.actions.extend(releases);
    sweep
}

#[cfg(test)]
mod tests;
