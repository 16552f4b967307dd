//! What a pass does before it observes, so that observing only reads: it readies the
//! edge's caches for the Workspace's attempt.
//!
//! - An installed attempt's release: the caches learn which Workspace its records wake,
//!   its installed revision's manifest is read once (and kept), and its kinds are
//!   followed (a watch per kind, started the first time a release names it).
//! - The attempt's first use of the edge: its namespace is read live and trusted over the
//!   caches, so that nothing is recorded as prepared for an edge that does not answer, and
//!   a namespace that is not the installer's (outside its caches) is seen at once.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, Client};
use providers_shared::{
    api::Workspace,
    installer::{self, AttemptReads, EdgeState, ReleaseRevision, release_objects::ReleaseObject},
};

use providers_edge_watch::{Cached, EdgeCache, UnfollowedKinds};

use crate::{
    edge::EdgeView,
    edge::helm_release,
    support::stop::{self, Stop},
};

/// What the pass readied for its observation.
pub struct Prepared {
    /// The edge as the observation sees it: the registry's state, or unreachable when its
    /// watches of the attempt's namespace, or a live read, say so.
    pub edge: EdgeState,
    /// An installed attempt's release, as its records show it.
    pub installed: Option<InstalledRelease>,
}

/// An installed attempt's release: its newest revision, and the objects of the installed
/// one while it is deployed.
#[derive(Default)]
pub struct InstalledRelease {
    pub newest: Option<ReleaseRevision>,
    pub followed: Option<FollowedObjects>,
}

/// The objects of an installed revision, and which of their kinds are not followed.
pub struct FollowedObjects {
    pub record_uid: String,
    pub objects: Arc<Vec<ReleaseObject>>,
    pub unfollowed: UnfollowedKinds,
    /// The revision's manifest, when this pass read its record (a content check in the
    /// same pass then parses it instead of reading the record again); never kept beyond.
    pub manifest: Option<Arc<str>>,
}

/// The edge a reconcile of `workspace` works on: that of its current attempt or cleanup,
/// else of its sealed plan, else the one it asks for.
pub fn edge_of(workspace: &Workspace) -> String {
    installer::attempt_reads(workspace)
        .map(|f| f.edge)
        .or_else(|| {
            workspace
                .spec
                .plan
                .as_ref()
                .map(|p| p.plan.edge_name.clone())
        })
        .unwrap_or_else(|| workspace.spec.edge.clone())
}

/// Readies `view`'s caches for observing `workspace`. An edge that does not answer is
/// prepared unreachable; any other failure stops the pass.
pub async fn prepare(view: &EdgeView, workspace: &Workspace) -> Result<Prepared, Stop> {
    let mut prepared = Prepared {
        edge: view.state.clone(),
        installed: None,
    };
    let (Some(reads), EdgeState::Ready(_), Some(client), Some(cache)) = (
        installer::attempt_reads(workspace),
        &view.state,
        view.client.as_ref(),
        view.cache.as_ref(),
    ) else {
        return Ok(prepared);
    };
    if let Some(why) = cache.unreachable_for(&reads.namespace).await {
        prepared.edge = EdgeState::Unreachable(why);
        return Ok(prepared);
    }
    let edge = edge_of(workspace);
    let step = if reads.installed {
        follow_installed(&edge, client, cache, &reads, workspace)
            .await
            .map(|installed| prepared.installed = Some(installed))
    } else if reads.authorize {
        read_namespace(&edge, client, cache, &reads.namespace).await
    } else {
        Ok(())
    };
    match step {
        Ok(()) => Ok(prepared),
        Err(Stop::EdgeDown { message, .. }) => {
            prepared.edge = EdgeState::Unreachable(message);
            Ok(prepared)
        }
        Err(other) => Err(other),
    }
}

/// The attempt's namespace, read live into the caches.
async fn read_namespace(
    edge: &str,
    client: &Client,
    cache: &EdgeCache,
    namespace: &str,
) -> Result<(), Stop> {
    let api: Api<Namespace> = Api::all(client.clone());
    if let Some(found) = api
        .get_opt(namespace)
        .await
        .map_err(|e| stop::edge_failure(edge, e))?
    {
        cache.wrote_object(Cached::Namespace, &found);
    }
    Ok(())
}

/// An installed attempt's release: wakes the Workspace on its records, and follows the
/// objects of its installed revision (also on the check that first records it, so that
/// their watches list, and wake the Workspace, right after the install).
async fn follow_installed(
    edge: &str,
    client: &Client,
    cache: &EdgeCache,
    reads: &AttemptReads,
    workspace: &Workspace,
) -> Result<InstalledRelease, Stop> {
    let Some(release) = reads.release.as_deref() else {
        return Ok(InstalledRelease::default());
    };
    let namespace = reads.namespace.as_str();
    cache.wake_on_release(
        namespace,
        release,
        &installer::names::workspace_key(
            workspace.metadata.namespace.as_deref().unwrap_or_default(),
            workspace.metadata.name.as_deref().unwrap_or_default(),
        ),
    );
    let installed = workspace.status.as_ref().and_then(|s| s.release.as_ref());
    let newest = cache.release_revision(namespace, release, installed.map(|r| r.revision));
    let followed = match &newest {
        Some(revision)
            if revision.status == "deployed"
                && installed.is_none_or(|i| i.record_uid == revision.uid) =>
        {
            follow_objects(edge, client, cache, namespace, revision, workspace).await?
        }
        _ => None,
    };
    Ok(InstalledRelease { newest, followed })
}

/// The objects of the installed revision `revision` (read once from its record), with
/// their kinds followed.
async fn follow_objects(
    edge: &str,
    client: &Client,
    cache: &EdgeCache,
    namespace: &str,
    revision: &ReleaseRevision,
    workspace: &Workspace,
) -> Result<Option<FollowedObjects>, Stop> {
    let (objects, manifest) = match cache.manifest(&revision.uid) {
        Some(objects) => (objects, None),
        None => {
            let Some(read) =
                helm_release::objects(edge, client, namespace, &revision.secret).await?
            else {
                return Ok(None);
            };
            let objects = Arc::new(read.objects);
            cache.keep_manifest(&revision.uid, objects.clone());
            cache.pin_manifest(&revision.uid, &read.manifest_digest);
            (objects, read.manifest)
        }
    };
    let execution = workspace
        .spec
        .plan
        .as_ref()
        .map(|sealed| sealed.plan.execution.as_slice())
        .unwrap_or_default();
    let unfollowed = cache
        .follow_kinds(client, namespace, &objects, |resource| {
            installer::release_objects::runner_may_write(
                execution,
                &resource.group,
                &resource.plural,
            )
        })
        .await;
    Ok(Some(FollowedObjects {
        record_uid: revision.uid.clone(),
        objects,
        unfollowed,
        manifest,
    }))
}
