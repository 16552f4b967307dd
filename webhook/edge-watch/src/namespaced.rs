//! The Secrets of the namespaces the installer prepared, one metadata watch per namespace.
//!
//! The hub's identity may not list Secrets across the edge (a leaked credential would read
//! every token and key there); it holds Secret rights only inside its own namespaces, by
//! the RoleBinding `providers-installer` (`edge_grants::NAMESPACE_RIGHTS`). So Helm's
//! release records, the attempts' values Secrets and the runtime credentials are watched
//! namespace by namespace: a watch starts when the namespace watch brings a namespace of
//! the installer's, and stops when it goes. A watch refused by RBAC (a namespace an older
//! installer prepared) binds the grant and lists again (`secret_watch`).

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::{Resource, api::ApiResource, core::PartialObjectMeta, runtime::WatchStreamExt};

use super::{
    compact_meta::CompactMeta,
    compact_store::{CompactStore, CompactWriter, compact_store},
    follow::{FollowWatch, Scope, followed_across_the_edge},
    follower::{Follower, InstallerNamespaces, Selected},
    metadata_watch::{Collection, Lists, metadata_watch},
    secret_watch::{self, Refused, wake_on_records},
    stream_pool::{Leased, StreamPool},
    sync::SYNC_TIMEOUT,
    wake::{ReleaseWorkspaces, WakeWorkspace},
};
use providers_runtime::{locks::Locked, synced::Synced, task::Task};

/// The most kinds followed in one namespace (a runner's rules name at most 16 rules of
/// 16 resources; charts make a handful).
const MAX_FOLLOWED_KINDS: usize = 32;

/// Why a kind of a release is not followed in a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FollowRefused {
    /// The namespace is not one the installer watches (yet).
    NamespaceNotWatched,
    /// The namespace follows as many kinds as it may ([`MAX_FOLLOWED_KINDS`]).
    TooManyKinds,
    /// No stream to the edge could be had for the watch.
    NoStream,
}

/// The per-namespace Secret watches of one edge.
pub(super) struct NamespaceWatches {
    /// `None` in unit tests: entries are then filled by hand.
    streams: Option<StreamPool>,
    /// The permits for this edge's initial lists, shared by every watch of it.
    lists: Lists,
    release_workspaces: ReleaseWorkspaces,
    wake: WakeWorkspace,
    entries: Mutex<HashMap<String, Arc<NamespaceEntry>>>,
    /// The follows of the kinds watched across the edge (`follow::CLUSTER_FOLLOWED`), by
    /// `(apiVersion, kind)`: each release namespace's follow of such a kind is a view of
    /// one of these.
    across: Mutex<HashMap<(String, String), Arc<FollowWatch>>>,
    /// Whether a namespace is one of the installer's: the follows across the edge keep
    /// the objects of those only.
    installer_namespaces: InstallerNamespaces,
}

/// One namespace's Secrets (metadata) and whether its watch has listed once.
pub(super) struct NamespaceEntry {
    pub(super) secrets: CompactStore<CompactMeta>,
    listed: Arc<Synced>,
    /// The watches of the kinds its installed releases made, by `(apiVersion, kind)`.
    follows: Mutex<HashMap<(String, String), Arc<FollowWatch>>>,
    /// The follow of the namespace's Secrets, fed by its Secret watch; in `follows` once a
    /// release there names a Secret the runner may write.
    secret_follow: Arc<FollowWatch>,
    _task: Option<Task>,
    /// The watch's stream on a connection to the edge, freed when the entry goes.
    _stream: Option<Leased>,
}

/// A namespace's Secret store and its writer, keeping what a decision reads of each (its
/// metadata compacted: `compact_meta`).
fn secret_store() -> (
    CompactStore<CompactMeta>,
    CompactWriter<PartialObjectMeta<Secret>, CompactMeta>,
) {
    compact_store(CompactMeta::of_partial::<Secret>)
}

impl NamespaceWatches {
    pub(super) fn new(
        streams: Option<StreamPool>,
        release_workspaces: ReleaseWorkspaces,
        wake: WakeWorkspace,
        installer_namespaces: InstallerNamespaces,
    ) -> Self {
        Self {
            streams,
            lists: Lists::default(),
            release_workspaces,
            wake,
            entries: Mutex::new(HashMap::new()),
            across: Mutex::new(HashMap::new()),
            installer_namespaces,
        }
    }

    /// Starts the watch of `namespace`'s Secrets, unless it runs already.
    pub(super) fn ensure(&self, namespace: &str) {
        let mut entries = self.entries.locked();
        if entries.contains_key(namespace) {
            return;
        }
        let (secrets, mut writer) = secret_store();
        let listed = Arc::new(Synced::default());
        let (secret_follow, mut secret_follower) = self.secret_follow(namespace);
        let stream = self.lease(namespace);
        let task = stream.as_ref().map(|Leased { client, .. }| {
            let collection = Collection {
                url: Secret::url_path(&(), Some(namespace)),
                labels: None,
            };
            let stream = metadata_watch::<Secret>(client.clone(), collection, self.lists.clone())
                .default_backoff()
                .inspect(move |event| {
                    if let Ok(event) = event {
                        // The follow reads the managed fields; the store keeps what a
                        // decision reads.
                        secret_follower.on_event(event);
                        writer.apply_watcher_event(event);
                    }
                });
            // The stream is boxed: moved in inline, an async fn holds it twice (argument and
            // pinned local), and every idle watch's task would be kilobytes larger.
            Task::spawn(secret_watch::drive(
                Box::pin(stream),
                Refused {
                    client: client.clone(),
                    namespace: namespace.to_owned(),
                },
                listed.clone(),
                wake_on_records(self.release_workspaces.clone(), self.wake.clone()),
            ))
        });
        entries.insert(
            namespace.to_owned(),
            Arc::new(NamespaceEntry {
                secrets,
                listed,
                follows: Mutex::new(HashMap::new()),
                secret_follow: Arc::new(secret_follow),
                _task: task,
                _stream: stream,
            }),
        );
    }

    /// The follow of `namespace`'s Secrets, and the follower its Secret watch feeds.
    fn secret_follow(&self, namespace: &str) -> (FollowWatch, Follower) {
        FollowWatch::fed(
            Scope::Namespace(namespace),
            "Secret",
            Selected::All,
            self.release_workspaces.clone(),
            self.wake.clone(),
        )
    }

    /// A stream for one more watch of this edge; `None` in unit tests, or when no
    /// connection can be made (said in the log: the namespace then waits unlisted).
    fn lease(&self, namespace: &str) -> Option<Leased> {
        match self.streams.as_ref()?.lease() {
            Ok(leased) => Some(leased),
            Err(error) => {
                tracing::warn!(%namespace, %error, "cannot connect to the edge for a watch");
                None
            }
        }
    }

    /// Stops the watch of a namespace that went.
    pub(super) fn remove(&self, namespace: &str) {
        self.entries.locked().remove(namespace);
    }

    /// Stops the watches of namespaces not in `live` (after the namespace watch listed
    /// again: those went while it was away).
    pub(super) fn keep_only(&self, live: &HashSet<String>) {
        self.entries
            .locked()
            .retain(|namespace, _| live.contains(namespace));
    }

    /// `namespace`'s Secrets, when they are watched.
    pub(super) fn secrets(&self, namespace: &str) -> Option<CompactStore<CompactMeta>> {
        self.entries
            .locked()
            .get(namespace)
            .map(|entry| entry.secrets.clone())
    }

    /// Waits until `namespace`'s watch has listed once; at once when it is not watched (no
    /// namespace of the installer's by that name is known yet: nothing of it can be there).
    pub(super) async fn ready(&self, namespace: &str) -> bool {
        let Some(entry) = self.entries.locked().get(namespace).cloned() else {
            return true;
        };
        tokio::time::timeout(SYNC_TIMEOUT, entry.listed.wait())
            .await
            .is_ok()
    }

    /// The follow of `kind` (`(apiVersion, kind)`, served as `resource`) in `namespace`,
    /// started when there is none, or why there is none.
    pub(super) fn follow(
        &self,
        namespace: &str,
        kind: &(String, String),
        resource: &ApiResource,
    ) -> Result<Arc<FollowWatch>, FollowRefused> {
        let entry = self
            .entries
            .locked()
            .get(namespace)
            .cloned()
            .ok_or(FollowRefused::NamespaceNotWatched)?;
        let mut follows = entry.follows.locked();
        if let Some(watch) = follows.get(kind) {
            return Ok(watch.clone());
        }
        if follows.len() >= MAX_FOLLOWED_KINDS {
            return Err(FollowRefused::TooManyKinds);
        }
        let watch = if kind.0 == "v1" && kind.1 == "Secret" {
            entry.secret_follow.clone()
        } else if followed_across_the_edge(kind) {
            Arc::new(
                self.across_the_edge(kind, resource)
                    .ok_or(FollowRefused::NoStream)?
                    .view(namespace),
            )
        } else {
            Arc::new(FollowWatch::start(
                self.lease(namespace).ok_or(FollowRefused::NoStream)?,
                self.lists.clone(),
                Scope::Namespace(namespace),
                resource,
                self.release_workspaces.clone(),
                self.wake.clone(),
            ))
        };
        follows.insert(kind.clone(), watch.clone());
        Ok(watch)
    }

    /// The follow of `kind` across the edge, started the first time a release names it.
    fn across_the_edge(
        &self,
        kind: &(String, String),
        resource: &ApiResource,
    ) -> Option<Arc<FollowWatch>> {
        let mut across = self.across.locked();
        if let Some(watch) = across.get(kind) {
            return Some(watch.clone());
        }
        let stream = match self.streams.as_ref()?.lease() {
            Ok(leased) => leased,
            Err(error) => {
                tracing::warn!(kind = %kind.1, %error, "cannot connect to the edge for a watch");
                return None;
            }
        };
        let watch = Arc::new(FollowWatch::start(
            stream,
            self.lists.clone(),
            Scope::AcrossTheEdge(self.installer_namespaces.clone()),
            resource,
            self.release_workspaces.clone(),
            self.wake.clone(),
        ));
        across.insert(kind.clone(), watch.clone());
        Some(watch)
    }

    /// The watch of `kind` in `namespace`, if one runs.
    pub(super) fn follow_watch(
        &self,
        namespace: &str,
        kind: &(String, String),
    ) -> Option<Arc<FollowWatch>> {
        let entry = self.entries.locked().get(namespace).cloned()?;
        let follows = entry.follows.locked();
        follows.get(kind).cloned()
    }

    /// How many watches follow release objects: in every namespace, and across the edge
    /// (Secrets are followed from the namespace's Secret watch, and the kinds followed
    /// across the edge from one watch each: their namespaces' follows are not counted).
    pub(super) fn follows(&self) -> usize {
        // Not held while a namespace's follows are locked: `follow` takes them the other way.
        let across = self.across.locked().len();
        let entries: Vec<Arc<NamespaceEntry>> = self.entries.locked().values().cloned().collect();
        across
            + entries
                .iter()
                .map(|e| {
                    e.follows
                        .locked()
                        .values()
                        .filter(|watch| watch.has_own_watch())
                        .count()
                })
                .sum::<usize>()
    }

    /// What `read` makes of each Secret watched that it takes, in every namespace.
    pub(super) fn all_secrets<R>(&self, mut read: impl FnMut(&CompactMeta) -> Option<R>) -> Vec<R> {
        let stores: Vec<_> = self
            .entries
            .locked()
            .values()
            .map(|e| e.secrets.clone())
            .collect();
        stores
            .iter()
            .flat_map(|store| store.filter_map(&mut read))
            .collect()
    }

    /// How many namespaces are watched.
    pub(super) fn count(&self) -> usize {
        self.entries.locked().len()
    }

    #[cfg(any(test, feature = "testing"))]
    pub(super) fn insert_listed(
        &self,
        namespace: &str,
    ) -> CompactWriter<PartialObjectMeta<Secret>, CompactMeta> {
        let (secrets, writer) = secret_store();
        let listed = Arc::new(Synced::default());
        listed.set();
        let (secret_follow, _) = self.secret_follow(namespace);
        self.entries.locked().insert(
            namespace.to_owned(),
            Arc::new(NamespaceEntry {
                secrets,
                listed,
                follows: Mutex::new(HashMap::new()),
                secret_follow: Arc::new(secret_follow),
                _task: None,
                _stream: None,
            }),
        );
        writer
    }
}
