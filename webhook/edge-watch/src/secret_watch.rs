//! What a namespace's Secret watch does besides filling its store (`namespaced`): binds the
//! installer's grant there when RBAC refuses the watch (a namespace an older installer
//! prepared), and wakes the Workspace of a release whose records change.

use std::{sync::Arc, time::Duration};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::{Client, ResourceExt, core::PartialObjectMeta, runtime::watcher};

use super::wake::{ReleaseWorkspaces, WakeWorkspace, wake_release};
use crate::grants as edge_grants;
use providers_runtime::synced::Synced;

/// How often a watch refused by RBAC binds the grant again.
const BIND_AGAIN: Duration = Duration::from_secs(10);

/// Whether a Secret with the label `owner` is one of Helm's release records (Helm labels
/// them `owner=helm`).
pub(super) fn is_helm_record(owner: Option<&str>) -> bool {
    owner == Some("helm")
}

/// What a watch refused by RBAC does: bind the installer's grant in its namespace.
pub(super) struct Refused {
    pub(super) client: Client,
    pub(super) namespace: String,
}

/// Runs a namespace's Secret watch: `listed` is set at its first list, `on_event` takes
/// each event, and a refusal by RBAC binds the installer's grant there (at most every
/// [`BIND_AGAIN`]).
pub(super) async fn drive<S>(
    mut stream: S,
    refused: Refused,
    listed: Arc<Synced>,
    mut on_event: impl FnMut(&watcher::Event<PartialObjectMeta<Secret>>),
) where
    S: Stream<Item = Result<watcher::Event<PartialObjectMeta<Secret>>, watcher::Error>> + Unpin,
{
    let mut bound_at: Option<tokio::time::Instant> = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                listed.on_event(&event);
                on_event(&event);
            }
            Err(
                watcher::Error::InitialListFailed(error) | watcher::Error::WatchStartFailed(error),
            ) if edge_grants::is_forbidden(&error)
                && bound_at.is_none_or(|at| at.elapsed() >= BIND_AGAIN) =>
            {
                bound_at = Some(tokio::time::Instant::now());
                let namespace = refused.namespace.as_str();
                // Boxed: inline, this request's future would size the task of every watch.
                if let Err(error) = Box::pin(edge_grants::bind(
                    &refused.client,
                    namespace,
                    edge_grants::NAMESPACE_RIGHTS,
                ))
                .await
                {
                    tracing::warn!(%namespace, %error, "cannot grant the installer its rights in its namespace");
                }
            }
            // Connection trouble shows in the edge's cluster-wide watches, which judge
            // whether the edge is reachable; this one retries with backoff.
            Err(error) => {
                tracing::debug!(namespace = %refused.namespace, %error, "watching Secrets")
            }
        }
    }
}

/// A change of an installed release's records (an upgrade, rollback or uninstall made
/// outside the installer) wakes its Workspace, which checks it for drift at once.
pub(super) fn wake_on_records(
    release_workspaces: ReleaseWorkspaces,
    wake: WakeWorkspace,
) -> impl FnMut(&watcher::Event<PartialObjectMeta<Secret>>) + Send + 'static {
    move |event| {
        let record = match event {
            watcher::Event::Apply(record) | watcher::Event::Delete(record) => record,
            _ => return,
        };
        if !is_helm_record(record.labels().get("owner").map(String::as_str)) {
            return;
        }
        wake_release(
            &release_workspaces,
            &wake,
            record.metadata.namespace.as_deref().unwrap_or_default(),
            record
                .labels()
                .get("name")
                .map(String::as_str)
                .unwrap_or_default(),
        );
    }
}
