//! The edge layer: one worker per Edge this replica holds that reads its kubeconfig Secret,
//! probes its API, writes the Edge's status, and watches the installer's Jobs on it.
//! Workers start and stop as Edges come and go; a change of readiness, or of a Job,
//! triggers the Workspaces concerned.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use futures::{StreamExt, channel::mpsc::UnboundedSender};
use kube::{
    Api, ResourceExt,
    runtime::{
        WatchStreamExt,
        reflector::{ObjectRef, Store},
        watcher,
    },
};
use providers_shared::api::{Edge, EdgeSpec, Workspace};

use crate::support::metrics::EdgeLabels;
use providers_runtime::task::Task;

pub mod content_check;
pub mod credential;
mod handles;
pub mod helm_release;
mod probe;
mod reconcile_trigger;
mod registry;
pub mod runner_log;

pub use handles::EdgeHandles;
use probe::probe_loop;
use reconcile_trigger::ReconcileTrigger;
pub use registry::{EdgeView, Edges};

/// Watches the Edges until the replica's run ends. Only the edges whose Lease this replica holds
/// are worked; others start and stop as their Leases come and go.
pub async fn run(
    ctx: Arc<EdgeHandles>,
    store: Store<Workspace>,
    trigger: UnboundedSender<ObjectRef<Workspace>>,
) {
    let api: Api<Edge> = Api::all(ctx.hub.clone());
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut workers: HashMap<String, (EdgeSpec, Task)> = HashMap::new();
    let mut known: HashMap<String, Edge> = HashMap::new();
    let mut listed: HashSet<String> = HashSet::new();
    let mut held_changes = ctx.shards.subscribe();
    let wake = ReconcileTrigger { store, trigger };
    loop {
        let event = tokio::select! {
            event = events.next() => match event {
                Some(event) => event,
                None => return,
            },
            changed = held_changes.changed() => {
                if changed.is_ok() {
                    work_held(&ctx, &wake, &mut workers, &known);
                }
                continue;
            }
        };
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(%error, "watching Edges");
                continue;
            }
        };
        match event {
            watcher::Event::Init => listed.clear(),
            watcher::Event::InitApply(edge) => {
                ctx.shards.edge_exists(&edge.name_any(), true);
                listed.insert(edge.name_any());
                known.insert(edge.name_any(), edge.clone());
                start_if_held(&ctx, &wake, &mut workers, edge);
            }
            watcher::Event::InitDone => {
                known.retain(|name, _| listed.contains(name));
                ctx.shards
                    .set_existing(Some(listed.iter().cloned().collect()));
                let gone: Vec<String> = workers
                    .keys()
                    .filter(|n| !listed.contains(*n))
                    .cloned()
                    .collect();
                for name in gone {
                    stop_worker(&ctx, &wake, &mut workers, &name);
                }
                ctx.edges.set_synced();
                // Workspaces of edges that do not exist learn it now.
                wake.all();
            }
            watcher::Event::Apply(edge) => {
                // Known to exist before anything else looks at it: a Workspace of this
                // edge is no longer the hub leader's to answer as one of a missing edge.
                ctx.shards.edge_exists(&edge.name_any(), true);
                known.insert(edge.name_any(), edge.clone());
                start_if_held(&ctx, &wake, &mut workers, edge);
            }
            watcher::Event::Delete(edge) => {
                ctx.shards.edge_exists(&edge.name_any(), false);
                known.remove(&edge.name_any());
                stop_worker(&ctx, &wake, &mut workers, &edge.name_any());
            }
        }
    }
}

/// Starts the edge's worker when this replica may work it; stops one it may no longer.
fn start_if_held(
    ctx: &Arc<EdgeHandles>,
    wake: &ReconcileTrigger,
    workers: &mut HashMap<String, (EdgeSpec, Task)>,
    edge: Edge,
) {
    let name = edge.name_any();
    if ctx.shards.holds(&name) {
        start_worker(ctx, wake, workers, edge);
    } else if workers.contains_key(&name) {
        stop_worker(ctx, wake, workers, &name);
    }
}

/// The edges held changed: start the workers of those taken, stop those of those lost,
/// and wake the Workspaces of both (a taken edge's pending attempts resume now).
fn work_held(
    ctx: &Arc<EdgeHandles>,
    wake: &ReconcileTrigger,
    workers: &mut HashMap<String, (EdgeSpec, Task)>,
    known: &HashMap<String, Edge>,
) {
    for (name, edge) in known {
        let held = ctx.shards.holds(name);
        let running = workers.contains_key(name);
        if held && !running {
            start_worker(ctx, wake, workers, edge.clone());
            wake.edge(name);
        } else if !held && running {
            stop_worker(ctx, wake, workers, name);
        }
    }
}

fn start_worker(
    ctx: &Arc<EdgeHandles>,
    wake: &ReconcileTrigger,
    workers: &mut HashMap<String, (EdgeSpec, Task)>,
    edge: Edge,
) {
    let name = edge.name_any();
    if workers
        .get(&name)
        .is_some_and(|(spec, _)| *spec == edge.spec)
    {
        return;
    }
    tracing::info!(edge = %name, "starting the edge's probe and Job watch");
    ctx.edges.expect(&name);
    let task = Task::spawn(probe_loop(
        ctx.clone(),
        wake.clone(),
        name.clone(),
        edge.spec.clone(),
    ));
    workers.insert(name, (edge.spec, task));
}

fn stop_worker(
    ctx: &Arc<EdgeHandles>,
    wake: &ReconcileTrigger,
    workers: &mut HashMap<String, (EdgeSpec, Task)>,
    name: &str,
) {
    tracing::info!(edge = %name, "the Edge is gone: stopping its probe and Job watch");
    workers.remove(name);
    ctx.edges.remove(name);
    ctx.metrics.edge_ready.remove(&EdgeLabels {
        edge: name.to_owned(),
    });
    wake.edge(name);
}
