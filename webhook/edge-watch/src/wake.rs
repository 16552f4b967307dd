//! Whom an event on an edge wakes: the Workspace an object's annotation names, or the one
//! a Helm release belongs to.

use providers_runtime::locks::Locked;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// Who to wake when an object on the edge changes: the Workspace named in its annotation.
pub type WakeWorkspace = Arc<dyn Fn(&str) + Send + Sync>;

/// Installed releases by `(namespace, release)`, and the Workspace each belongs to.
pub(super) type ReleaseWorkspaces = Arc<Mutex<HashMap<(String, String), String>>>;

/// Wakes the Workspace `release` in `namespace` belongs to, if it belongs to one.
pub(super) fn wake_release(
    release_workspaces: &ReleaseWorkspaces,
    wake: &WakeWorkspace,
    namespace: &str,
    release: &str,
) {
    let owner = release_workspaces
        .locked()
        .get(&(namespace.to_owned(), release.to_owned()))
        .cloned();
    if let Some(workspace) = owner {
        wake(&workspace);
    }
}
