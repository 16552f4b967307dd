//! The objects of installed releases, followed by metadata alone for drift: one watch per
//! release namespace and kind (selected by Helm's `app.kubernetes.io/managed-by=Helm`
//! label), keeping of each object only what its field managers say
//! (`providers_shared::installer::release_objects::ObjectTrace`), never its contents.
//!
//! A watch starts the first time an installed release of that namespace names the kind,
//! and stops with the namespace. Two exceptions:
//! - Secrets: the namespace's own Secret watch (`namespaced`) runs anyway, and its events
//!   feed their follow.
//! - The kinds the installer may list across the edge already ([`CLUSTER_FOLLOWED`], by
//!   its ClusterRole `providers-edge-installer`): one watch per kind and edge, selected
//!   by Helm's label, keeping the objects of the installer's own namespaces only, and
//!   each release namespace reads its objects from it (a view). A thousand release
//!   namespaces with a ServiceAccount each then hold one watch, not a thousand (ADR 43).
//!
//! A kind RBAC does not let the installer list there (the ClusterRole
//! `providers-edge-namespace` names the kinds followed) stays unknown: its objects are not
//! judged, and the installer says so in its log.
//!
//! What a follow does with its watch's events is `follower`.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use kube::{
    Resource,
    api::{ApiResource, DynamicObject},
    runtime::WatchStreamExt,
};
use providers_shared::installer::{
    ObjectSeen, Unfollowed,
    release_objects::{ObjectTrace, ReleaseObject},
};

use super::{
    follower::{Follower, HELM_MANAGED, InstallerNamespaces, Selected, Target, drive},
    metadata_watch::{Collection, Lists, metadata_watch},
    stream_pool::Leased,
    wake::{ReleaseWorkspaces, WakeWorkspace},
};
use providers_runtime::{locks::Locked, synced::Synced, task::Task};

/// The kinds followed by one watch across the edge, as `(apiVersion, kind)`: those the
/// installer lists and watches in every namespace already (the ClusterRole
/// `providers-edge-installer` of `manifests/edge` grants it, for the objects it makes
/// there). A kind added here without that right would be refused and never followed.
/// (It lists Jobs too, but a release's Jobs are not followed: `release_objects`.)
pub(super) const CLUSTER_FOLLOWED: [(&str, &str); 3] = [
    ("v1", "ServiceAccount"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
];

/// Where a follow watches.
pub(super) enum Scope<'a> {
    /// One release namespace.
    Namespace(&'a str),
    /// Every namespace, keeping the objects of the installer's own only: the watch brings
    /// every Helm-made object of its kind on the edge, and whoever may make one anywhere
    /// must not grow the installer's memory. Its namespaces are known before any helm
    /// runs in them (the installer creates them empty, and the namespace cache lists
    /// before any reconcile decides), so no release object is passed over for it.
    AcrossTheEdge(InstallerNamespaces),
}

impl Scope<'_> {
    fn namespace(&self) -> Option<&str> {
        match self {
            Scope::Namespace(namespace) => Some(namespace),
            Scope::AcrossTheEdge(_) => None,
        }
    }
}

/// Whether `kind` is followed by one watch across the edge.
pub(super) fn followed_across_the_edge(kind: &(String, String)) -> bool {
    CLUSTER_FOLLOWED
        .iter()
        .any(|(api_version, k)| kind.0 == *api_version && kind.1 == *k)
}

/// One namespace's watch of one kind, the watch of a kind across the edge, or one
/// namespace's view of that.
pub(super) struct FollowWatch {
    /// By name; across the edge, by `namespace/name`.
    traces: Arc<Mutex<HashMap<String, ObjectTrace>>>,
    /// In a view of a watch across the edge: the namespace whose objects it reads.
    within: Option<String>,
    listed: Arc<Synced>,
    /// RBAC refused the last list: what the watch showed is no longer known.
    refused: Arc<AtomicBool>,
    /// The watch's task and its stream on a connection to the edge, stopped and freed when
    /// the watch goes; `None` for a kind followed from a watch that runs anyway.
    _watch: Option<(Task, Leased)>,
}

/// How long a watch refused by RBAC waits before it lists again (the platform may add the
/// kind to the edge's ClusterRole meanwhile).
const REFUSED_PAUSE: Duration = Duration::from_secs(600);

impl FollowWatch {
    /// Starts following the objects of `resource` in `scope`.
    pub(super) fn start(
        stream: Leased,
        lists: Lists,
        scope: Scope,
        resource: &ApiResource,
        release_workspaces: ReleaseWorkspaces,
        wake: WakeWorkspace,
    ) -> Self {
        let client = stream.client.clone();
        let url = DynamicObject::url_path(resource, scope.namespace());
        let (mut watch, mut follower) = Self::fed(
            scope,
            &resource.kind,
            Selected::ByHelmLabel,
            release_workspaces,
            wake,
        );
        let task = Task::spawn(async move {
            loop {
                let collection = Collection {
                    url: url.clone(),
                    labels: Some(HELM_MANAGED),
                };
                let stream =
                    metadata_watch::<DynamicObject>(client.clone(), collection, lists.clone())
                        .default_backoff();
                // Boxed, so the idle task does not hold the stream twice (see `namespaced`).
                drive(Box::pin(stream), &mut follower).await;
                tokio::time::sleep(REFUSED_PAUSE).await;
            }
        });
        watch._watch = Some((task, stream));
        watch
    }

    /// Follows the objects of `kind` in `namespace` from the events of a watch that runs
    /// anyway, which the returned [`Follower`] takes (the namespace's Secret watch: a
    /// second watch of the same Secrets would cost a stream and its state for nothing).
    pub(super) fn fed(
        scope: Scope,
        kind: &str,
        selected: Selected,
        release_workspaces: ReleaseWorkspaces,
        wake: WakeWorkspace,
    ) -> (Self, Follower) {
        let watch = Self {
            traces: Arc::default(),
            within: None,
            listed: Arc::default(),
            refused: Arc::default(),
            _watch: None,
        };
        let target = Target {
            namespace: scope.namespace().map(str::to_owned),
            kind: kind.to_owned(),
            traces: watch.traces.clone(),
            listed: watch.listed.clone(),
            refused: watch.refused.clone(),
            release_workspaces,
            wake,
        };
        let installer_namespaces = match scope {
            Scope::Namespace(_) => None,
            Scope::AcrossTheEdge(installer_namespaces) => Some(installer_namespaces),
        };
        let follower = Follower::new(target, selected, installer_namespaces);
        (watch, follower)
    }

    /// What `namespace` sees of this watch across the edge: its own objects.
    pub(super) fn view(&self, namespace: &str) -> Self {
        Self {
            traces: self.traces.clone(),
            within: Some(namespace.to_owned()),
            listed: self.listed.clone(),
            refused: self.refused.clone(),
            _watch: None,
        }
    }

    /// Whether this follow holds a watch of its own (what the follow-watch metric counts).
    pub(super) fn has_own_watch(&self) -> bool {
        self._watch.is_some()
    }

    /// What the watch shows of `name`.
    pub(super) fn seen(&self, name: &str) -> ObjectSeen {
        if self.refused.load(Ordering::Acquire) {
            return ObjectSeen::Unfollowed(Unfollowed::ListRefused);
        }
        if !self.listed.is_set() {
            return ObjectSeen::Unknown;
        }
        let key = match &self.within {
            Some(namespace) => format!("{namespace}/{name}"),
            None => name.to_owned(),
        };
        match self.traces.locked().get(&key) {
            Some(trace) => ObjectSeen::Present(trace.clone()),
            None => ObjectSeen::Missing,
        }
    }
}

/// What each of `objects` shows, from the watches `watch_of` finds for its kind (or why
/// its kind is not followed).
pub(super) fn seen_all(
    objects: &[ReleaseObject],
    watch_of: impl Fn(&ReleaseObject) -> Result<Arc<FollowWatch>, Option<Unfollowed>>,
) -> Vec<(ReleaseObject, ObjectSeen)> {
    objects
        .iter()
        .map(|object| {
            let seen = match watch_of(object) {
                Ok(watch) => watch.seen(&object.name),
                Err(Some(why)) => ObjectSeen::Unfollowed(why),
                Err(None) => ObjectSeen::Unknown,
            };
            (object.clone(), seen)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use k8s_openapi::api::core::v1::Secret;
    use kube::{core::PartialObjectMeta, runtime::watcher};

    use super::*;
    use crate::follower::{HELM_MANAGED_KEY, HELM_MANAGED_VALUE, HELM_RELEASE};

    fn secret(name: &str, helm: bool) -> PartialObjectMeta<Secret> {
        let labels = if helm {
            serde_json::json!({ HELM_MANAGED_KEY: HELM_MANAGED_VALUE })
        } else {
            serde_json::json!({ "owner": "helm" })
        };
        serde_json::from_value(serde_json::json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": {
                "name": name,
                "namespace": "team-a",
                "labels": labels,
                "annotations": { HELM_RELEASE: "hello" },
                "managedFields": [{
                    "manager": "helm", "operation": "Apply", "apiVersion": "v1",
                    "time": "2026-12-06T00:00:00Z", "fieldsType": "FieldsV1",
                    "fieldsV1": { "f:data": { "f:token": {} } }
                }]
            }
        }))
        .unwrap()
    }

    fn fed() -> (FollowWatch, Follower, Arc<AtomicUsize>) {
        let woken = Arc::new(AtomicUsize::new(0));
        let release_workspaces: ReleaseWorkspaces = Arc::default();
        release_workspaces
            .locked()
            .insert(("team-a".into(), "hello".into()), "team-a/hello".into());
        let counter = woken.clone();
        let wake: WakeWorkspace = Arc::new(move |_: &str| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        let (watch, follower) = FollowWatch::fed(
            Scope::Namespace("team-a"),
            "Secret",
            Selected::All,
            release_workspaces,
            wake,
        );
        (watch, follower, woken)
    }

    fn service_account(
        namespace: &str,
        name: &str,
        release: &str,
    ) -> PartialObjectMeta<DynamicObject> {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": format!("{namespace}-{name}"),
                "labels": { HELM_MANAGED_KEY: HELM_MANAGED_VALUE },
                "annotations": { HELM_RELEASE: release },
            }
        }))
        .unwrap()
    }

    #[test]
    fn a_kind_followed_across_the_edge_shows_each_namespace_its_own_objects() {
        let woken: Arc<Mutex<Vec<String>>> = Arc::default();
        let release_workspaces: ReleaseWorkspaces = Arc::default();
        release_workspaces
            .locked()
            .insert(("team-a".into(), "hello".into()), "org/a".into());
        release_workspaces
            .locked()
            .insert(("team-b".into(), "hello".into()), "org/b".into());
        let seen_wakes = woken.clone();
        let wake: WakeWorkspace = Arc::new(move |key: &str| {
            seen_wakes.locked().push(key.to_owned());
        });
        let ours: InstallerNamespaces = Arc::new(|namespace: &str| namespace.starts_with("team-"));
        let (across, mut follower) = FollowWatch::fed(
            Scope::AcrossTheEdge(ours),
            "ServiceAccount",
            Selected::ByHelmLabel,
            release_workspaces,
            wake,
        );
        let (a, b) = (across.view("team-a"), across.view("team-b"));
        assert_eq!(
            a.seen("hello"),
            ObjectSeen::Unknown,
            "before the first list"
        );

        follower.on_event::<DynamicObject>(&watcher::Event::Init);
        follower.on_event(&watcher::Event::InitApply(service_account(
            "team-a", "hello", "hello",
        )));
        follower.on_event(&watcher::Event::InitApply(service_account(
            "elsewhere",
            "hello",
            "x",
        )));
        follower.on_event::<DynamicObject>(&watcher::Event::InitDone);
        assert_eq!(
            across.traces.locked().keys().collect::<Vec<_>>(),
            ["team-a/hello"],
            "an object outside the installer's namespaces is not kept"
        );
        assert!(matches!(a.seen("hello"), ObjectSeen::Present(t) if t.uid == "team-a-hello"));
        assert_eq!(
            b.seen("hello"),
            ObjectSeen::Missing,
            "another namespace's object of the same name is not this namespace's"
        );
        let mut after_list = woken.locked().clone();
        after_list.sort();
        assert_eq!(
            after_list,
            ["org/a", "org/b"],
            "a list wakes every installed release's Workspace"
        );

        woken.locked().clear();
        follower.on_event(&watcher::Event::Apply(service_account(
            "elsewhere",
            "another",
            "x",
        )));
        assert_eq!(across.traces.locked().len(), 1, "nor when it changes");
        assert!(woken.locked().is_empty());
        follower.on_event(&watcher::Event::Apply(service_account(
            "team-b", "hello", "hello",
        )));
        assert!(matches!(b.seen("hello"), ObjectSeen::Present(t) if t.uid == "team-b-hello"));
        follower.on_event(&watcher::Event::Delete(service_account(
            "team-a", "hello", "hello",
        )));
        assert_eq!(a.seen("hello"), ObjectSeen::Missing);
        assert!(matches!(b.seen("hello"), ObjectSeen::Present(_)));
        assert_eq!(
            *woken.locked(),
            ["org/b", "org/a"],
            "each change wakes the release of its own namespace"
        );
        assert!(!a.has_own_watch(), "a view holds no watch");
    }

    /// Every kind followed across the edge is one the shipped ClusterRole lets the
    /// installer list and watch in every namespace: without that right its watch would be
    /// refused, and no release's objects of the kind followed.
    #[test]
    fn the_kinds_followed_across_the_edge_are_listed_by_the_shipped_cluster_role() {
        use k8s_openapi::api::rbac::v1::ClusterRole;
        use serde::Deserialize;
        let text = include_str!("../../../manifests/edge/installer-rbac.yaml");
        let role = serde_norway::Deserializer::from_str(text)
            .filter_map(|document| serde_json::Value::deserialize(document).ok())
            .filter(|v| {
                v["kind"] == "ClusterRole" && v["metadata"]["name"] == "providers-edge-installer"
            })
            .find_map(|v| serde_json::from_value::<ClusterRole>(v).ok())
            .expect("manifests/edge has the ClusterRole providers-edge-installer");
        let rules = role.rules.unwrap_or_default();
        for (api_version, kind) in CLUSTER_FOLLOWED {
            let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
            let plural = format!("{}s", kind.to_lowercase());
            for verb in ["list", "watch"] {
                assert!(
                    rules.iter().any(|rule| {
                        rule.api_groups.iter().flatten().any(|g| g == group)
                            && rule.resources.iter().flatten().any(|r| *r == plural)
                            && rule.verbs.iter().any(|v| v == verb)
                            && rule.resource_names.as_ref().is_none_or(|n| n.is_empty())
                    }),
                    "{verb} {plural}.{group} is not granted by providers-edge-installer"
                );
            }
        }
    }

    #[test]
    fn secrets_fed_from_the_namespace_watch_are_followed_only_with_helms_label() {
        let (watch, mut follower, woken) = fed();
        assert_eq!(
            watch.seen("token"),
            ObjectSeen::Unknown,
            "before the first list"
        );
        follower.on_event::<Secret>(&watcher::Event::Init);
        follower.on_event(&watcher::Event::InitApply(secret("token", true)));
        follower.on_event(&watcher::Event::InitApply(secret(
            "sh.helm.release.v1.hello.v1",
            false,
        )));
        follower.on_event::<Secret>(&watcher::Event::InitDone);
        assert!(matches!(watch.seen("token"), ObjectSeen::Present(_)));
        assert_eq!(
            watch.seen("sh.helm.release.v1.hello.v1"),
            ObjectSeen::Missing
        );
        assert!(!watch.has_own_watch(), "no watch of its own");
        let after_list = woken.load(Ordering::SeqCst);

        // A Secret that is not a release object changes: nothing to wake.
        follower.on_event(&watcher::Event::Apply(secret(
            "sh.helm.release.v1.hello.v2",
            false,
        )));
        assert_eq!(woken.load(Ordering::SeqCst), after_list);

        // The release's Secret loses Helm's label: it left the follow, and its release wakes.
        follower.on_event(&watcher::Event::Apply(secret("token", false)));
        assert_eq!(watch.seen("token"), ObjectSeen::Missing);
        assert_eq!(woken.load(Ordering::SeqCst), after_list + 1);

        // Back, then edited with both Helm's label and its release annotation removed in
        // one write: the release it belonged to still wakes.
        follower.on_event(&watcher::Event::Apply(secret("token", true)));
        let mut stripped = secret("token", false);
        stripped.metadata.annotations = None;
        follower.on_event(&watcher::Event::Apply(stripped));
        assert_eq!(watch.seen("token"), ObjectSeen::Missing);
        assert_eq!(woken.load(Ordering::SeqCst), after_list + 3);
    }
}
