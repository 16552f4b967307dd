//! Whom an event on an edge wakes: the Workspace an object's annotation names, or the one
//! following a Helm release.

use crate::locks::Locked;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// Who to wake when an object on the edge changes: the Workspace named in its annotation.
pub type WakeWorkspace = Arc<dyn Fn(&str) + Send + Sync>;

/// Installed releases by `(namespace, release)`, and the Workspace each belongs to.
pub(super) type ReleaseFollowers = Arc<Mutex<HashMap<(String, String), String>>>;

/// Wakes the Workspace following `release` in `namespace`, if one does.
pub(super) fn wake_release(
    followed: &ReleaseFollowers,
    wake: &WakeWorkspace,
    namespace: &str,
    release: &str,
) {
    let owner = followed
        .locked()
        .get(&(namespace.to_owned(), release.to_owned()))
        .cloned();
    if let Some(workspace) = owner {
        wake(&workspace);
    }
}
