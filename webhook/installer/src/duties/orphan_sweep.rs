//! The orphan sweep of every replica: on every Ready edge it holds, soon after its run
//! starts and then every `--orphan-sweep-interval`, the installer's labelled objects whose
//! Workspace is gone from the hub are removed as PrepareDelete would have (`providers_shared::installer::sweep`).
//! What it removed is recorded in Events on the Edge and in a metric.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use k8s_openapi::{
    api::{
        batch::v1::Job,
        core::v1::{Namespace, ObjectReference, Secret, ServiceAccount},
        rbac::v1::{Role, RoleBinding},
    },
    jiff::Timestamp,
};
use kube::{
    Api, Client, Resource,
    api::{ListParams, Patch, PatchParams},
    core::PartialObjectMeta,
    runtime::events::{Event, EventType},
};
use providers_shared::{
    api::{Edge, GROUP, VERSION, Workspace},
    installer::{
        Kind,
        names::{LABEL_MANAGED_BY, MANAGED_BY},
        sweep::{Found, ListedObject, SweepAction, sweep},
    },
};
use serde::de::DeserializeOwned;

use crate::{
    edge::Edges,
    reconcile::context::Context,
    reconcile::execute::delete,
    support::error::Error,
    support::event_recorder::EventRecorder,
    support::metrics::{Metrics, SweptLabels},
    support::ownership::Shards,
    support::stop::{self, Stop},
};

/// How often the loop looks for edges due a sweep.
const TICK: Duration = Duration::from_secs(5);

/// What the orphan sweep reads and writes with: the hub (which Workspaces live), the edges
/// known to this replica, the metrics and Events it reports to, and how often it sweeps an
/// edge.
pub struct SweepHandles<'a> {
    pub hub: &'a Client,
    pub edges: &'a Edges,
    pub metrics: &'a Metrics,
    pub recorder: &'a EventRecorder,
    /// Which edges this replica holds: checked before every removal, as every action is.
    pub shards: &'a Shards,
    pub interval: Duration,
}

impl<'a> SweepHandles<'a> {
    /// The handles of the replica's context.
    pub fn of(ctx: &'a Context) -> Self {
        Self {
            hub: &ctx.hub,
            edges: &ctx.edges,
            metrics: &ctx.metrics,
            recorder: &ctx.recorder,
            shards: &ctx.shards,
            interval: ctx.config.orphan_sweep_interval,
        }
    }
}

pub async fn run(ctx: SweepHandles<'_>) {
    let interval = ctx.interval;
    let mut swept: HashMap<String, Timestamp> = HashMap::new();
    loop {
        tokio::time::sleep(TICK.min(interval)).await;
        for (edge, client) in ctx.edges.ready_edges() {
            let due = swept.get(&edge).is_none_or(|at| {
                Timestamp::now().duration_since(*at).as_secs() >= interval.as_secs() as i64
            });
            if !due {
                continue;
            }
            match sweep_edge(&ctx, &edge, &client).await {
                Ok(()) => {
                    swept.insert(edge, Timestamp::now());
                }
                Err(error) => tracing::warn!(%edge, %error, "orphan sweep failed; trying again"),
            }
        }
    }
}

async fn sweep_edge(ctx: &SweepHandles<'_>, edge: &str, client: &Client) -> Result<(), Stop> {
    // The edge first: anything made for a Workspace created meanwhile belongs to one the
    // hub list below holds.
    let mut listed = Vec::new();
    listed.extend(list::<Namespace>(edge, client, Found::Namespace).await?);
    listed
        .extend(list::<ServiceAccount>(edge, client, Found::Attempt(Kind::ServiceAccount)).await?);
    listed.extend(list::<Role>(edge, client, Found::Attempt(Kind::Role)).await?);
    listed.extend(list::<RoleBinding>(edge, client, Found::Attempt(Kind::RoleBinding)).await?);
    // Secrets from the per-namespace watches: the installer may not list them across the
    // edge (`namespaced.rs` of providers-edge-watch). A namespace no reconcile reads (an
    // orphan's) is watched from now on, so its Secrets are swept next time.
    if let Some(cache) = ctx.edges.lookup(edge).cache {
        for namespace in listed.iter().filter(|l| l.found == Found::Namespace) {
            cache.watch_namespace(&namespace.name);
        }
        listed.extend(
            cache
                .managed_secrets()
                .into_iter()
                .map(|(namespace, name, object)| ListedObject {
                    found: Found::Attempt(Kind::Secret),
                    namespace,
                    name,
                    object,
                }),
        );
    }
    listed.extend(list::<Job>(edge, client, Found::Attempt(Kind::Job)).await?);
    if listed.is_empty() {
        return Ok(());
    }
    // Every Workspace, whatever this replica's --workspace-selector: an object of another
    // shard's Workspace is not an orphan.
    let live: HashSet<String> = Api::<Workspace>::all(ctx.hub.clone())
        .list_metadata(&ListParams::default())
        .await
        .map_err(Error::Hub)?
        .items
        .into_iter()
        .filter_map(|w| w.metadata.uid)
        .collect();
    let plan = sweep(&listed, &live);
    if plan.actions.is_empty() {
        return Ok(());
    }
    // A step that fails is logged and the others go on: one object the installer may not
    // remove must not hold up every other orphan's cleanup. A namespace is released only
    // once every step in it went through (the releases come last).
    let mut failed_in: HashSet<String> = HashSet::new();
    for action in &plan.actions {
        let namespace = match action {
            SweepAction::Delete(deletion) => deletion.namespace.as_str(),
            SweepAction::ReleaseJob { namespace, .. } => namespace.as_str(),
            SweepAction::ReleaseNamespace { name, .. } => name.as_str(),
        };
        if matches!(action, SweepAction::ReleaseNamespace { .. }) && failed_in.contains(namespace) {
            continue;
        }
        // Fencing, as for every action: a replica paused past its renew deadline, or whose
        // edge was taken over meanwhile, removes nothing more there.
        if !ctx.shards.holds(edge) {
            return Err(Stop::EdgeNotHeld {
                edge: edge.to_owned(),
            });
        }
        match execute_step(edge, client, action).await {
            Ok(name) => {
                ctx.metrics
                    .orphans_swept
                    .get_or_create(&SweptLabels {
                        edge: edge.to_owned(),
                        action: name.to_owned(),
                    })
                    .inc();
            }
            Err(error) => {
                tracing::warn!(%edge, namespace, %error, "orphan sweep: a step failed; the others go on");
                failed_in.insert(namespace.to_owned());
            }
        }
    }
    for (uid, (workspace, count)) in &plan.orphans {
        let note = format!(
            "removed or released {count} object(s) on edge {edge} of Workspace {workspace} (UID {uid}), which was deleted without its cleanup; the release and the provider's credential stay"
        );
        tracing::warn!(%edge, %uid, %workspace, count, "swept an orphaned Workspace's objects");
        let event = Event {
            type_: EventType::Warning,
            reason: "OrphansSwept".into(),
            note: Some(note),
            action: "Sweep".into(),
            secondary: None,
        };
        if let Err(error) = ctx.recorder.publish(&event, &edge_reference(edge)).await {
            tracing::warn!(%error, "cannot publish an Event");
        }
    }
    Ok(())
}

async fn list<K>(edge: &str, client: &Client, found: Found) -> Result<Vec<ListedObject>, Stop>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    let selector = format!("{LABEL_MANAGED_BY}={MANAGED_BY}");
    let items = api
        .list_metadata(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| stop::edge_failure(edge, e))?
        .items;
    Ok(items
        .into_iter()
        .map(|item: PartialObjectMeta<K>| ListedObject {
            found,
            namespace: item.metadata.namespace.clone().unwrap_or_default(),
            name: item.metadata.name.clone().unwrap_or_default(),
            object: providers_shared::installer::ObjectState::from_meta(&item.metadata),
        })
        .collect())
}

/// Runs one sweep step; returns its name for the metric.
async fn execute_step(
    edge: &str,
    client: &Client,
    action: &SweepAction,
) -> Result<&'static str, Stop> {
    let params = PatchParams::default();
    let tolerate_gone = |result: std::result::Result<(), kube::Error>| match result {
        Err(kube::Error::Api(status)) if status.is_not_found() || status.code == 422 => Ok(()),
        other => other,
    };
    match action {
        SweepAction::ReleaseJob {
            namespace,
            name,
            patch,
        } => {
            let api: Api<Job> = Api::namespaced(client.clone(), namespace);
            let result = api
                .patch(name, &params, &Patch::Json::<()>(patch.clone()))
                .await
                .map(|_| ());
            tolerate_gone(result).map_err(|e| stop::edge_failure(edge, e))?;
            Ok("release-job")
        }
        SweepAction::ReleaseNamespace { name, patch } => {
            let api: Api<Namespace> = Api::all(client.clone());
            let result = api
                .patch(name, &params, &Patch::Json::<()>(patch.clone()))
                .await
                .map(|_| ());
            tolerate_gone(result).map_err(|e| stop::edge_failure(edge, e))?;
            Ok("release-namespace")
        }
        SweepAction::Delete(deletion) => {
            let result = match deletion.kind {
                Kind::ServiceAccount => delete::<ServiceAccount>(client, deletion).await,
                Kind::Role => delete::<Role>(client, deletion).await,
                Kind::RoleBinding => delete::<RoleBinding>(client, deletion).await,
                Kind::Secret => delete::<Secret>(client, deletion).await,
                Kind::Job => delete::<Job>(client, deletion).await,
            };
            // A UID precondition that no longer holds: the object was replaced; leave it.
            let result = match result {
                Err(kube::Error::Api(status)) if status.is_conflict() => Ok(()),
                other => other,
            };
            result.map_err(|e| stop::edge_failure(edge, e))?;
            Ok(match deletion.kind {
                Kind::ServiceAccount => "delete-service-account",
                Kind::Role => "delete-role",
                Kind::RoleBinding => "delete-role-binding",
                Kind::Secret => "delete-values-secret",
                Kind::Job => "delete-job",
            })
        }
    }
}

/// The Edge object on the hub, for Events.
fn edge_reference(edge: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some(format!("{GROUP}/{VERSION}")),
        kind: Some(Edge::kind(&()).into_owned()),
        name: Some(edge.to_owned()),
        ..Default::default()
    }
}
