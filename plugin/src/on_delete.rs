//! What deleting a Workspace does on its edge, as `status` tells it before and during the
//! deletion.

use providers_shared::api::Workspace;

use crate::object_names::namespace_suffix;

/// What deleting the Workspace does on its edge, in a line: whether it waits for the
/// edge, finishes without it, or was abandoned by the platform.
pub fn on_delete(ws: &Workspace, name: &str, namespace_flag: Option<&str>) -> String {
    let ns = namespace_suffix(namespace_flag);
    let status = ws.status.clone().unwrap_or_default();
    let edge = status
        .target
        .as_ref()
        .map(|t| t.edge.clone())
        .unwrap_or_else(|| ws.spec.edge.clone());
    if let Some(reason) = providers_shared::installer::delete::abandoned(ws) {
        return format!(
            "finishes without edge {edge}: abandoned by the platform ({})",
            providers_shared::text::shown(reason)
        );
    }
    if !providers_shared::installer::delete::edge_touched(&status) {
        return format!("finishes at once: nothing was prepared on edge {edge}");
    }
    format!(
        "finishes once the installer has cleaned up on edge {edge}, waiting while it is unreachable; if it is gone for good, a platform admin can abandon it (kubectl provider delete {name}{ns} --abandon)"
    )
}
