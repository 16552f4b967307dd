//! The objects of installed releases, followed by metadata alone for drift: one watch per
//! release namespace and kind (selected by Helm's `app.kubernetes.io/managed-by=Helm`
//! label), keeping of each object only what its field managers say
//! (`providers::installer::release_objects::ObjectTrace`), never its contents.
//!
//! A watch starts the first time an installed release of that namespace names the kind,
//! and stops with the namespace. A kind RBAC does not let the installer list there (the
//! ClusterRole `providers-edge-namespace` names the kinds followed) stays unknown: its
//! objects are not judged, and the installer says so in its log.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use kube::{
    Api, ResourceExt,
    api::{ApiResource, DynamicObject},
    core::PartialObjectMeta,
    runtime::{WatchStreamExt, watcher},
};
use providers::installer::{
    ObjectSeen,
    release_objects::{ObjectTrace, ReleaseObject, trace_of},
};

use super::{
    Wake,
    namespaced::Flag,
    stream_pool::Leased,
    watches::{Followed, wake_release},
};
use crate::controller::{edge_grants, term::Task};

/// The label Helm puts on every object it makes.
const HELM_MANAGED: &str = "app.kubernetes.io/managed-by=Helm";
/// The annotation Helm puts on every object it makes: the release's name.
const HELM_RELEASE: &str = "meta.helm.sh/release-name";

/// One namespace's watch of one kind.
pub(super) struct FollowWatch {
    traces: Arc<Mutex<HashMap<String, ObjectTrace>>>,
    listed: Arc<Flag>,
    /// RBAC refused the last list: what the watch showed is no longer known.
    refused: Arc<AtomicBool>,
    _task: Task,
    /// The watch's stream on a connection to the edge, freed when the watch goes.
    _stream: Leased,
}

/// How long a watch refused by RBAC waits before it lists again (the platform may add the
/// kind to the edge's ClusterRole meanwhile).
const REFUSED_PAUSE: Duration = Duration::from_secs(600);

impl FollowWatch {
    /// Starts following the objects of `resource` in `namespace`.
    pub(super) fn start(
        stream: Leased,
        namespace: &str,
        resource: &ApiResource,
        followed: Followed,
        wake: Wake,
    ) -> Self {
        let api: Api<PartialObjectMeta<DynamicObject>> =
            Api::namespaced_with(stream.client.clone(), namespace, resource);
        let traces = Arc::new(Mutex::new(HashMap::new()));
        let listed = Arc::new(Flag::default());
        let refused = Arc::new(AtomicBool::new(false));
        let target = Target {
            namespace: namespace.to_owned(),
            kind: resource.kind.clone(),
            traces: traces.clone(),
            listed: listed.clone(),
            refused: refused.clone(),
            followed,
            wake,
        };
        let task = Task::spawn(async move {
            loop {
                let stream = watcher(api.clone(), watcher::Config::default().labels(HELM_MANAGED))
                    .default_backoff();
                drive(stream, &target).await;
                tokio::time::sleep(REFUSED_PAUSE).await;
            }
        });
        Self {
            traces,
            listed,
            refused,
            _task: task,
            _stream: stream,
        }
    }

    /// What the watch shows of `name`.
    pub(super) fn seen(&self, name: &str) -> ObjectSeen {
        if !self.listed.is_set() || self.refused.load(Ordering::Acquire) {
            return ObjectSeen::Unknown;
        }
        match self
            .traces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
        {
            Some(trace) => ObjectSeen::Present(trace.clone()),
            None => ObjectSeen::Missing,
        }
    }
}

struct Target {
    namespace: String,
    kind: String,
    traces: Arc<Mutex<HashMap<String, ObjectTrace>>>,
    listed: Arc<Flag>,
    refused: Arc<AtomicBool>,
    followed: Followed,
    wake: Wake,
}

impl Target {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ObjectTrace>> {
        self.traces.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the Workspace of the release that made `object` (by Helm's annotation).
    fn wake_release_of(&self, object: &PartialObjectMeta<DynamicObject>) {
        let Some(release) = object.annotations().get(HELM_RELEASE) else {
            return;
        };
        wake_release(&self.followed, &self.wake, &self.namespace, release);
    }

    /// Wakes every followed release of the namespace (after a relist: anything may have
    /// changed while the watch was away).
    fn wake_all(&self) {
        let owners: Vec<String> = self
            .followed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|((namespace, _), _)| *namespace == self.namespace)
            .map(|(_, workspace)| workspace.clone())
            .collect();
        for workspace in owners {
            (self.wake)(&workspace);
        }
    }
}

/// Follows the watch's events until RBAC refuses it (then it pauses: a refused list is
/// not retried every few seconds for good).
async fn drive<S>(stream: S, target: &Target)
where
    S: futures::Stream<
            Item = Result<watcher::Event<PartialObjectMeta<DynamicObject>>, watcher::Error>,
        >,
{
    let mut stream = std::pin::pin!(stream);
    let mut listing: HashMap<String, ObjectTrace> = HashMap::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Init) => listing.clear(),
            Ok(watcher::Event::InitApply(object)) => {
                listing.insert(object.name_any(), trace_of(&object.metadata));
            }
            Ok(watcher::Event::InitDone) => {
                *target.lock() = std::mem::take(&mut listing);
                target.refused.store(false, Ordering::Release);
                target.listed.set();
                target.wake_all();
            }
            Ok(watcher::Event::Apply(object)) => {
                target
                    .lock()
                    .insert(object.name_any(), trace_of(&object.metadata));
                target.wake_release_of(&object);
            }
            Ok(watcher::Event::Delete(object)) => {
                target.lock().remove(&object.name_any());
                target.wake_release_of(&object);
            }
            Err(
                watcher::Error::InitialListFailed(error) | watcher::Error::WatchStartFailed(error),
            ) if edge_grants::is_forbidden(&error) => {
                target.refused.store(true, Ordering::Release);
                tracing::warn!(
                    namespace = %target.namespace,
                    kind = %target.kind,
                    "the installer may not list this kind in the release namespace, so its objects are not followed for drift: add it to the ClusterRole providers-edge-namespace on the edge"
                );
                return;
            }
            Err(error) => {
                tracing::debug!(namespace = %target.namespace, kind = %target.kind, %error, "following objects")
            }
        }
    }
}

/// What each of `objects` shows, from the watches `watch_of` finds for its kind.
pub(super) fn seen_all(
    objects: &[ReleaseObject],
    watch_of: impl Fn(&ReleaseObject) -> Option<Arc<FollowWatch>>,
) -> Vec<(ReleaseObject, ObjectSeen)> {
    objects
        .iter()
        .map(|object| {
            let seen = watch_of(object)
                .map(|watch| watch.seen(&object.name))
                .unwrap_or(ObjectSeen::Unknown);
            (object.clone(), seen)
        })
        .collect()
}
