//! What a replica runs: the Workspace controller with its watches (the sealing keys, the
//! edges), and the hub-wide duties during each term of the leader Lease. Everything it
//! starts is dropped when the run ends.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, ResourceExt,
    runtime::{
        Controller, PredicateConfig, WatchStreamExt, controller, predicates, reflector, watcher,
    },
};
use providers_shared::api::Workspace;

use crate::{
    duties::{
        orphan_sweep::{self, SweepHandles},
        values_sweep::{self, ValuesSweepHandles},
    },
    edge,
    process::{lease::Elector, readiness::ControllerReadiness},
    reconcile::{context::Context, workspace},
    support::metrics::fleet::Fleet,
};
use providers_runtime::task::Task;

pub async fn run(ctx: Arc<Context>, readiness: Arc<ControllerReadiness>) -> anyhow::Result<()> {
    ctx.edges.reset();
    // Every Workspace is looked at again when the published keys change (or are first read).
    let (keys_changed, keys_read) = futures::channel::mpsc::unbounded();
    let _keys = Task::spawn(ctx.keys.clone().watch(
        Api::<ConfigMap>::namespaced(ctx.hub.clone(), &ctx.config.namespace),
        ctx.config.keys_config_map.clone(),
        keys_changed,
    ));
    let mut config = watcher::Config::default();
    if !ctx.config.workspace_selector.is_empty() {
        config = config.labels(&ctx.config.workspace_selector);
    }
    let workspaces: Api<Workspace> = Api::all(ctx.hub.clone());
    // Changes of spec and the deletion mark (both bump the generation) start a reconcile;
    // the controller's own status and finalizer writes do not. Edge events, key changes
    // and requeues come in through their own triggers.
    let (reader, writer) = reflector::store();
    let listed = readiness.clone();
    // The fleet's gauges, counted from each event while the store still holds what it
    // replaces.
    let fleet = Fleet::new(ctx.metrics.clone());
    let counted = reader.clone();
    let changes = watcher(workspaces, config)
        .default_backoff()
        .modify(trim_for_cache)
        .inspect_ok(move |event| fleet.on_event(&counted, event))
        .reflect(writer)
        // Said from the stream itself: the store's wait_until_ready wakes only its last
        // waiter, and the controller is one already.
        .inspect_ok(move |event| listed.workspaces().on_event(event))
        .applied_objects()
        .predicate_filter(predicates::generation, PredicateConfig::default());
    let controller = Controller::for_stream(changes, reader)
        .with_config(controller::Config::default().concurrency(ctx.config.concurrency));
    let (trigger, triggered) = futures::channel::mpsc::unbounded();
    let _edges = Task::spawn(edge::run(
        Arc::new(ctx.edge_handles()),
        controller.store(),
        trigger,
    ));
    let _sweep = Task::spawn({
        let ctx = ctx.clone();
        async move { orphan_sweep::run(SweepHandles::of(&ctx)).await }
    });
    let _hub_duties = Task::spawn(lead_hub_duties(
        ctx.clone(),
        readiness.clone(),
        controller.store(),
    ));
    controller
        .reconcile_on(triggered)
        .reconcile_all_on(keys_read)
        .run(
            workspace::reconcile,
            workspace::error_policy,
            Arc::new(workspace::Reconciler::new(ctx.clone())),
        )
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile");
            }
        })
        .await;
    Ok(())
}

/// Every replica runs the Workspace controller; the leader Lease only elects who runs the
/// hub-wide duties, one term at a time (the PlanValues sweep, the Workspaces of edges that
/// do not exist, and the count of edges without an owner, which `shards::run` takes while
/// this replica leads).
async fn lead_hub_duties(
    ctx: Arc<Context>,
    readiness: Arc<ControllerReadiness>,
    store: reflector::Store<Workspace>,
) {
    let mut elector = Elector::new(ctx.hub.clone(), ctx.config.leader.clone());
    loop {
        // A member first: the leader of the hub-wide duties is always a replica the others
        // count among the members.
        ctx.shards.until_member().await;
        elector.acquire().await;
        tracing::info!("leading the hub-wide duties");
        ctx.metrics.leader.set(1);
        ctx.shards.set_leading(Some(tokio::time::Instant::now()));
        let shards = ctx.shards.clone();
        tokio::select! {
            () = elector.hold_reporting(|at| shards.set_leading(Some(at))) => {}
            () = values_sweep::run(
                ValuesSweepHandles::of(&ctx, readiness.workspaces()),
                store.clone(),
            ) => {}
        }
        ctx.shards.set_leading(None);
        ctx.metrics.leader.set(0);
        tracing::warn!("no longer leading the hub-wide duties");
    }
}

/// The annotation `kubectl apply` (and Argo CD, which applies the same way by default)
/// writes: the whole manifest applied, the spec once more.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops from a Workspace what no decision reads before the cache keeps it: its
/// managedFields (a third of what the cache would hold for it) and the manifest a client
/// side apply copied into an annotation (as much again as its spec). Workspaces are only
/// ever patched, never written back whole, so nothing dropped here is lost.
fn trim_for_cache(workspace: &mut Workspace) {
    workspace.managed_fields_mut().clear();
    workspace.annotations_mut().remove(LAST_APPLIED);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_neither_managed_fields_nor_the_last_applied_manifest() {
        let mut workspace: Workspace = serde_json::from_value(serde_json::json!({
            "apiVersion": "providers.platform.dev/v1alpha1",
            "kind": "Workspace",
            "metadata": {
                "name": "hello",
                "namespace": "org-a",
                "annotations": {
                    LAST_APPLIED: "{\"spec\":{\"recipe\":\"hello\"}}",
                    "providers.platform.dev/abandon": "moved to another edge",
                },
                "managedFields": [{ "manager": "argocd-controller", "operation": "Update" }],
            },
            "spec": { "recipe": "hello", "edge": "edge-1" },
        }))
        .unwrap();
        trim_for_cache(&mut workspace);
        assert!(
            workspace
                .metadata
                .managed_fields
                .unwrap_or_default()
                .is_empty()
        );
        assert_eq!(
            workspace
                .metadata
                .annotations
                .unwrap()
                .into_keys()
                .collect::<Vec<_>>(),
            ["providers.platform.dev/abandon"],
            "the installer's own annotations stay"
        );
    }
}
