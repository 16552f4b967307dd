//! The watches that fill an edge's caches, and whom their events wake: the Workspace an
//! object's annotation names, or the one a Helm release belongs to.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
};

use futures::{Stream, StreamExt};
use k8s_openapi::{
    api::{
        batch::v1::Job,
        core::v1::{Namespace, ServiceAccount},
        rbac::v1::{Role, RoleBinding},
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    core::PartialObjectMeta,
    runtime::{WatchStreamExt, watcher},
};
use providers_shared::installer::names;
use serde::de::DeserializeOwned;

use super::{
    EdgeCache, WatchesListed,
    compact_meta::{CompactJob, CompactMeta},
    compact_store::{CompactStore, CompactWriter, compact_store},
    namespaced::NamespaceWatches,
    own_edge_writes::OwnEdgeWrites,
    release_objects::ReleaseObjects,
    stream_pool::StreamPool,
    wake::{ReleaseWorkspaces, WakeWorkspace},
};
use providers_runtime::{task::Task, unreachable::Reachability};

/// The caches and the tasks that fill them; the tasks stop when this is dropped.
pub struct Watches {
    pub cache: EdgeCache,
    _tasks: Vec<Task>,
}

impl Watches {
    /// Starts the watches of `client`'s edge: the few cluster-wide ones on `client`, those
    /// per release namespace on streams of `streams`. Changes of the installer's Jobs, and
    /// namespaces that go away, wake their Workspace.
    pub fn start(client: &Client, streams: StreamPool, wake: WakeWorkspace) -> Self {
        let managed = watcher::Config::default().labels(&format!(
            "{}={}",
            names::LABEL_MANAGED_BY,
            names::MANAGED_BY
        ));
        let reachability = Reachability::default();
        let listed = Arc::new(WatchesListed::default());
        let own = OwnEdgeWrites::new();
        let release_workspaces: ReleaseWorkspaces = Arc::new(Mutex::new(HashMap::new()));
        // The namespace cache first: the follows across the edge keep the objects of the
        // namespaces it holds.
        let (namespaces, namespace_writer) = compact_store(CompactMeta::of_partial::<Namespace>);
        let installer_namespaces = namespaces.clone();
        let namespaced = Arc::new(NamespaceWatches::new(
            Some(streams),
            release_workspaces.clone(),
            wake.clone(),
            Arc::new(move |namespace: &str| {
                installer_namespaces.get(None, namespace, |_| ()).is_some()
            }),
        ));
        let mut watches = Starter {
            client,
            reachability: &reachability,
            listed: &listed,
            tasks: Vec::new(),
        };
        watches.metadata(
            namespace_writer,
            managed.clone(),
            on_namespace(namespaced.clone(), wake.clone()),
        );
        let (service_accounts, writer) = compact_store(CompactMeta::of_partial::<ServiceAccount>);
        watches.metadata(writer, managed.clone(), |_| {});
        let (roles, writer) = compact_store(CompactMeta::of_partial::<Role>);
        watches.metadata(writer, managed.clone(), |_| {});
        let (role_bindings, writer) = compact_store(CompactMeta::of_partial::<RoleBinding>);
        watches.metadata(writer, managed.clone(), |_| {});
        let mut tasks = watches.tasks;
        let (jobs, task) = watch_jobs(
            Api::all(client.clone()),
            managed,
            (&reachability, &listed),
            own.clone(),
            wake,
        );
        tasks.push(task);
        listed.of(tasks.len());
        Self {
            cache: EdgeCache {
                namespaces,
                service_accounts,
                roles,
                role_bindings,
                namespaced,
                jobs,
                own,
                release_workspaces,
                unreachable: reachability,
                listed,
                releases: ReleaseObjects::default(),
                identity: Arc::default(),
            },
            _tasks: tasks,
        }
    }
}

/// Starts one edge's metadata watches and keeps their tasks.
struct Starter<'a> {
    client: &'a Client,
    reachability: &'a Reachability,
    listed: &'a Arc<WatchesListed>,
    tasks: Vec<Task>,
}

impl Starter<'_> {
    /// A watch of the metadata of every `K` that `config` selects, into `writer`'s store
    /// (a compact form: all a decision reads of them), calling `on_event` per event.
    fn metadata<K>(
        &mut self,
        mut writer: CompactWriter<PartialObjectMeta<K>, CompactMeta>,
        config: watcher::Config,
        mut on_event: impl FnMut(&watcher::Event<PartialObjectMeta<K>>) + Send + 'static,
    ) where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        let api: Api<PartialObjectMeta<K>> = Api::all(self.client.clone());
        let stream = watcher(api, config).default_backoff();
        self.tasks.push(Task::spawn(drive(
            stream,
            self.reachability.clone(),
            self.listed.clone(),
            move |event| {
                writer.apply_watcher_event(event);
                on_event(event);
            },
        )));
    }
}

/// A namespace of the installer's that goes: its Secrets are no longer watched, and the
/// Workspace named in its annotation is woken. (Its watch starts when a reconcile first
/// reads it, after the installer's grant there exists: `EdgeCache::ready_in`.)
fn on_namespace(
    namespaced: Arc<NamespaceWatches>,
    wake: WakeWorkspace,
) -> impl FnMut(&watcher::Event<PartialObjectMeta<Namespace>>) + Send + 'static {
    // The namespaces of a list in progress: those not in it went while the watch was away.
    let mut listing: HashSet<String> = HashSet::new();
    move |event| match event {
        watcher::Event::Apply(_) => {}
        watcher::Event::Delete(namespace) => {
            namespaced.remove(&namespace.name_any());
            wake_owner(&wake, namespace.meta());
        }
        watcher::Event::Init => listing.clear(),
        watcher::Event::InitApply(namespace) => {
            listing.insert(namespace.name_any());
        }
        watcher::Event::InitDone => namespaced.keep_only(&std::mem::take(&mut listing)),
    }
}

/// The installer's Jobs, kept compact (a decision reads their metadata and outcome).
fn watch_jobs(
    api: Api<Job>,
    config: watcher::Config,
    (reachability, listed): (&Reachability, &Arc<WatchesListed>),
    own: OwnEdgeWrites,
    wake: WakeWorkspace,
) -> (CompactStore<CompactJob>, Task) {
    let (store, mut writer) = compact_store(CompactJob::new);
    let stream = watcher(api, config).default_backoff();
    let task = Task::spawn(drive(
        stream,
        reachability.clone(),
        listed.clone(),
        move |event| {
            writer.apply_watcher_event(event);
            match event {
                // The installer's own create or patch, coming back: nothing new to decide on.
                watcher::Event::Apply(job) if own.is_own_job(job) => {}
                watcher::Event::Apply(job) | watcher::Event::Delete(job) => {
                    wake_owner(&wake, &job.metadata)
                }
                _ => {}
            }
        },
    ));
    (store, task)
}

fn wake_owner(wake: &WakeWorkspace, meta: &ObjectMeta) {
    if let Some(key) = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(names::ANNOTATION_WORKSPACE))
    {
        wake(key);
    }
}

async fn drive<K, S>(
    stream: S,
    reachability: Reachability,
    listed: Arc<WatchesListed>,
    mut on_event: impl FnMut(&watcher::Event<K>),
) where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
{
    let mut stream = std::pin::pin!(stream);
    let mut first_list = true;
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                reachability.set(None);
                // First the store takes the event: a reconcile woken by the first list
                // reads it.
                on_event(&event);
                if first_list && matches!(event, watcher::Event::InitDone) {
                    first_list = false;
                    listed.one_more();
                }
            }
            Err(error) => {
                tracing::debug!(%error, "watching the edge");
                reachability.set(Some(format!("its watch failed: {error}")));
            }
        }
    }
}
