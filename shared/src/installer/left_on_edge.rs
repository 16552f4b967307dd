//! Whether a deleted Workspace may have anything on an edge for the installer to clean
//! up: the platform may have abandoned the edge's objects, or none was ever created.

use crate::api::{Workspace, WorkspaceStatus};

use super::names;

/// The reason the platform gave for abandoning the edge's objects, when it did.
pub fn abandoned(workspace: &Workspace) -> Option<&str> {
    workspace
        .metadata
        .annotations
        .as_ref()?
        .get(names::ANNOTATION_ABANDON)
        .map(String::as_str)
}

/// Whether the installer may have created anything on an edge for this Workspace: the
/// current attempt has a preparation record (written before its first edge object) or a
/// Job, or a release namespace was seen for an earlier one.
pub fn edge_touched(status: &WorkspaceStatus) -> bool {
    status.preparation.is_some() || status.job_uid.is_some() || status.namespace_uid.is_some()
}
