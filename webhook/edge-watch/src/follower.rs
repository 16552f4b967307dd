//! What a follow does with its watch's events: keeps a trace of each release object (what
//! its field managers say, `providers_shared::installer::release_objects::ObjectTrace`),
//! replaced whole at every (re)list, and wakes the Workspace of each release an event
//! touches. The follows themselves, where they watch and what they show, are `follow`.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{api::DynamicObject, core::PartialObjectMeta, runtime::watcher};
use providers_shared::installer::{
    drift::edit_order::ordered,
    release_objects::{ObjectTrace, trace_of},
};

use super::wake::{ReleaseWorkspaces, WakeWorkspace, wake_release};
use crate::grants as edge_grants;
use providers_runtime::{locks::Locked, synced::Synced};

/// The label Helm puts on every object it makes, as a selector and as key and value.
pub(super) const HELM_MANAGED: &str = "app.kubernetes.io/managed-by=Helm";
pub(super) const HELM_MANAGED_KEY: &str = "app.kubernetes.io/managed-by";
pub(super) const HELM_MANAGED_VALUE: &str = "Helm";
/// The annotation Helm puts on every object it makes: the release's name.
pub(super) const HELM_RELEASE: &str = "meta.helm.sh/release-name";
/// The longest release name Helm accepts: a longer annotation is no release's, and is
/// neither kept nor woken.
const MAX_RELEASE_NAME: usize = 53;

/// Whether a namespace is one of the installer's (in the edge's label-selected namespace
/// cache).
pub(super) type InstallerNamespaces = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Which objects a followed watch brings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Selected {
    /// Only objects with Helm's label (the API server selects them).
    ByHelmLabel,
    /// Every object of the kind: those without Helm's label are passed over here.
    All,
}

/// What a follower keeps its traces in, and whom it wakes: the `follow::FollowWatch`
/// it feeds shares `traces`, `listed` and `refused`.
pub(super) struct Target {
    /// `None` for a watch across the edge.
    pub(super) namespace: Option<String>,
    pub(super) kind: String,
    pub(super) traces: Arc<Mutex<HashMap<String, ObjectTrace>>>,
    pub(super) listed: Arc<Synced>,
    pub(super) refused: Arc<AtomicBool>,
    pub(super) release_workspaces: ReleaseWorkspaces,
    pub(super) wake: WakeWorkspace,
}

impl Target {
    /// Wakes the Workspace of `release` in `namespace`, if it has one.
    fn wake_release(&self, namespace: &str, release: &str) {
        wake_release(&self.release_workspaces, &self.wake, namespace, release);
    }

    /// Wakes the Workspace of every installed release the watch sees (after a relist:
    /// anything may have changed while the watch was away).
    fn wake_all(&self) {
        let owners: Vec<String> = self
            .release_workspaces
            .locked()
            .iter()
            .filter(|((namespace, _), _)| {
                self.namespace.as_ref().is_none_or(|mine| mine == namespace)
            })
            .map(|(_, workspace)| workspace.clone())
            .collect();
        for workspace in owners {
            (self.wake)(&workspace);
        }
    }
}

/// Keeps what a watch's events say of the followed objects: a trace of each (by name),
/// replaced whole at every (re)list.
pub(super) struct Follower {
    target: Target,
    selected: Selected,
    /// Across the edge: the namespaces whose objects are kept.
    installer_namespaces: Option<InstallerNamespaces>,
    listing: HashMap<String, ObjectTrace>,
    /// The release each traced object named when last seen (Helm's annotation), so that
    /// an edit that strips or changes the annotation, or the label, still wakes the
    /// release the object belonged to.
    releases: HashMap<String, String>,
}

impl Follower {
    /// A follower that keeps the objects `selected` in `target`; across the edge, of
    /// `installer_namespaces` only.
    pub(super) fn new(
        target: Target,
        selected: Selected,
        installer_namespaces: Option<InstallerNamespaces>,
    ) -> Self {
        Self {
            target,
            selected,
            installer_namespaces,
            listing: HashMap::new(),
            releases: HashMap::new(),
        }
    }

    pub(super) fn on_event<K>(&mut self, event: &watcher::Event<PartialObjectMeta<K>>) {
        match event {
            watcher::Event::Init => self.listing.clear(),
            watcher::Event::InitApply(object) => {
                if self.is_release_object(&object.metadata) {
                    let name = self.key_of(&object.metadata);
                    // Bounded by the version seen before the relist, when there was one;
                    // the trace is made before the shared traces are locked.
                    let trace = trace_of(&object.metadata);
                    let trace = ordered(trace, self.target.traces.locked().get(&name));
                    self.listing.insert(name.clone(), trace);
                    self.remember_release(name, &object.metadata);
                }
            }
            watcher::Event::InitDone => {
                let listing = &self.listing;
                self.releases.retain(|name, _| listing.contains_key(name));
                *self.target.traces.locked() = std::mem::take(&mut self.listing);
                self.target.refused.store(false, Ordering::Release);
                self.target.listed.set();
                self.target.wake_all();
            }
            watcher::Event::Apply(object) => {
                let name = self.key_of(&object.metadata);
                let before = self.releases.remove(&name);
                if self.is_release_object(&object.metadata) {
                    let trace = trace_of(&object.metadata);
                    let mut traces = self.target.traces.locked();
                    let trace = ordered(trace, traces.get(&name));
                    traces.insert(name.clone(), trace);
                    drop(traces);
                    self.remember_release(name, &object.metadata);
                } else if self.target.traces.locked().remove(&name).is_none() {
                    // Not an object of a release, and never was: nothing to wake.
                    return;
                }
                self.wake(before, &object.metadata);
            }
            watcher::Event::Delete(object) => {
                let name = self.key_of(&object.metadata);
                self.target.traces.locked().remove(&name);
                let before = self.releases.remove(&name);
                self.wake(before, &object.metadata);
            }
        }
    }

    fn remember_release(&mut self, name: String, object: &ObjectMeta) {
        if let Some(release) = release_of(object) {
            self.releases.insert(name, release.to_owned());
        }
    }

    /// Wakes the release the object named before this event, and the one it names now.
    fn wake(&self, before: Option<String>, object: &ObjectMeta) {
        let namespace = object.namespace.as_deref().unwrap_or_default();
        if let Some(before) = &before {
            self.target.wake_release(namespace, before);
        }
        if let Some(now) = release_of(object).filter(|now| before.as_deref() != Some(*now)) {
            self.target.wake_release(namespace, now);
        }
    }

    /// What the traces are keyed by: the name, or across the edge `namespace/name`.
    fn key_of(&self, object: &ObjectMeta) -> String {
        let name = object.name.as_deref().unwrap_or_default();
        match &self.target.namespace {
            Some(_) => name.to_owned(),
            None => format!("{}/{name}", object.namespace.as_deref().unwrap_or_default()),
        }
    }

    /// RBAC refused the watch: its objects are no longer known.
    fn refused(&self) {
        let newly = !self.target.refused.swap(true, Ordering::AcqRel);
        if newly {
            // Its releases say so on their Workspaces (status.unfollowed) at once.
            self.target.wake_all();
        }
        match &self.target.namespace {
            Some(namespace) => tracing::warn!(
                %namespace,
                kind = %self.target.kind,
                "the installer may not list this kind in the release namespace, so its objects are not followed for drift: add it to the ClusterRole providers-edge-namespace on the edge"
            ),
            None => tracing::warn!(
                kind = %self.target.kind,
                "the installer may not list this kind across the edge, so its objects are not followed for drift: apply the ClusterRole providers-edge-installer of manifests/edge as shipped"
            ),
        }
    }

    /// Whether Helm made `object` (its label; an object that loses it leaves the follow,
    /// as it leaves a label-selected watch), in a namespace this follow keeps.
    fn is_release_object(&self, object: &ObjectMeta) -> bool {
        let helm_made = self.selected == Selected::ByHelmLabel
            || object
                .labels
                .as_ref()
                .and_then(|labels| labels.get(HELM_MANAGED_KEY))
                .is_some_and(|value| value == HELM_MANAGED_VALUE);
        helm_made
            && self
                .installer_namespaces
                .as_ref()
                .is_none_or(|ours| ours(object.namespace.as_deref().unwrap_or_default()))
    }
}

/// The release that made `object`, by Helm's annotation.
fn release_of(object: &ObjectMeta) -> Option<&str> {
    object
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(HELM_RELEASE))
        .map(String::as_str)
        .filter(|release| release.len() <= MAX_RELEASE_NAME)
}

/// Follows the watch's events until RBAC refuses it (then it pauses: a refused list is
/// not retried every few seconds for good).
pub(super) async fn drive<S>(mut stream: S, follower: &mut Follower)
where
    S: futures::Stream<
            Item = Result<watcher::Event<PartialObjectMeta<DynamicObject>>, watcher::Error>,
        > + Unpin,
{
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => follower.on_event(&event),
            Err(
                watcher::Error::InitialListFailed(error) | watcher::Error::WatchStartFailed(error),
            ) if edge_grants::is_forbidden(&error) => {
                follower.refused();
                return;
            }
            Err(error) => {
                tracing::debug!(namespace = ?follower.target.namespace, kind = %follower.target.kind, %error, "following objects")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_name_longer_than_helm_allows_is_no_release() {
        let woken: Arc<Mutex<Vec<String>>> = Arc::default();
        let release_workspaces: ReleaseWorkspaces = Arc::default();
        let long = "r".repeat(MAX_RELEASE_NAME + 1);
        release_workspaces
            .locked()
            .insert(("team-a".into(), long.clone()), "org/a".into());
        let seen_wakes = woken.clone();
        let wake: WakeWorkspace = Arc::new(move |key: &str| {
            seen_wakes.locked().push(key.to_owned());
        });
        let target = Target {
            namespace: Some("team-a".into()),
            kind: "ServiceAccount".into(),
            traces: Arc::default(),
            listed: Arc::default(),
            refused: Arc::default(),
            release_workspaces,
            wake,
        };
        let mut follower = Follower::new(target, Selected::ByHelmLabel, None);
        let object: PartialObjectMeta<DynamicObject> = serde_json::from_value(serde_json::json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": {
                "name": "sa",
                "namespace": "team-a",
                "labels": { HELM_MANAGED_KEY: HELM_MANAGED_VALUE },
                "annotations": { HELM_RELEASE: long },
            }
        }))
        .unwrap();
        follower.on_event(&watcher::Event::Apply(object));
        assert!(follower.releases.is_empty(), "its name is not kept");
        assert!(woken.locked().is_empty(), "and nothing is woken for it");
    }
}
