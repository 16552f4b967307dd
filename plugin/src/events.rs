//! Reading the Events about a Workspace, as `kubectl describe` does: core/v1 Events in its
//! namespace whose involvedObject is that very object (by UID, so Events of a deleted
//! Workspace of the same name do not show).

use k8s_openapi::api::core::v1::Event;
use kube::{Api, Client, api::ListParams};
use providers_shared::api::Workspace;

use crate::views::events::{SHOWN, most_recent};

/// The most recent Events about `ws`, oldest first; none when they cannot be read (no
/// right to list Events here): like `kubectl describe`, the status is shown without them.
pub async fn recent(client: &Client, namespace: &str, ws: &Workspace) -> Vec<Event> {
    let Some(uid) = ws.metadata.uid.as_deref() else {
        return Vec::new();
    };
    let params = ListParams::default().fields(&format!("involvedObject.uid={uid}"));
    match Api::<Event>::namespaced(client.clone(), namespace)
        .list(&params)
        .await
    {
        Ok(list) => most_recent(list.items, SHOWN),
        Err(_) => Vec::new(),
    }
}
