//! Edges shared out over installer replicas (ADR 40): the installer's only mode, one
//! replica being one shard that holds every edge. This module takes and gives back the
//! Leases; `support::ownership` says which edges this replica holds now.
//!
//! Every replica holds a membership Lease (`<lease>-member-<identity>`) and works; each
//! edge belongs to one live member by rendezvous hashing
//! (`providers_shared::installer::edge_owners`), and is worked only under its fencing Lease
//! (`<lease>-edge-<edge>`), taken with the leader election's rules. [`Shards`] says which
//! edges this replica may write to now: those whose Lease it renewed within the renew
//! deadline, which ends before the Lease can expire, so a replica frozen past it writes
//! nothing once it runs again.

mod lease_clock;

use std::{
    collections::{BTreeSet, HashMap},
    sync::Arc,
    time::Duration,
};

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{
    Api, Client, ResourceExt,
    core::PartialObjectMeta,
    runtime::{WatchStreamExt, reflector, watcher},
};
use providers_shared::{
    api::Edge,
    installer::edge_owners::{
        EdgeStep, edge_lease, edge_step, leader_outside_membership, member_lease,
    },
};
use tokio::time::Instant;

use self::lease_clock::LeaseClock;
use crate::{
    process::lease::{Elector, LeaseConfig, SILENCE_MARGIN},
    support::{
        metrics::Metrics,
        ownership::{ShardConfig, Shards},
    },
};
use providers_runtime::synced::Synced;
use providers_runtime::task::Task;

/// How long a change waits for the ones right behind it (renewals come in bursts, one per
/// held Lease of every replica each retry period), so a round runs at most ten times a
/// second.
const COALESCE: Duration = Duration::from_millis(100);

/// Keeps this replica's membership Lease, and takes and gives back edges' Leases as the
/// membership says, until the process ends.
pub async fn run(hub: Client, shards: Arc<Shards>, metrics: Arc<Metrics>) {
    let config = shards.config().clone();
    let me = config.me();
    let base = config.leader.name.clone();
    let _membership = Task::spawn(keep_membership(
        hub.clone(),
        config.lease_config(member_lease(&base, &config.leader.identity)),
        shards.clone(),
    ));
    let leases: Api<Lease> = Api::namespaced(hub.clone(), &config.leader.namespace);
    let edges: Api<PartialObjectMeta<Edge>> = Api::all(hub.clone());
    // The Leases and the Edges, watched: a renewal is seen when it happens, so a member
    // that stops renewing is known silent a lease duration after its last renewal (not
    // up to two listing periods later), and its edges are taken at once.
    let (lease_store, lease_writer) = reflector::store::<Lease>();
    let (edge_store, edge_writer) = reflector::store::<PartialObjectMeta<Edge>>();
    let (leases_listed, edges_listed) = (Synced::default(), Synced::default());
    let lease_changes = watcher(leases, watcher::Config::default())
        .default_backoff()
        .reflect(lease_writer)
        .map(|event| event.map(|event| leases_listed.on_event(&event)));
    let edge_changes = watcher(edges, watcher::Config::default())
        .default_backoff()
        .reflect(edge_writer)
        .map(|event| event.map(|event| edges_listed.on_event(&event)));
    let mut changes = std::pin::pin!(futures::stream::select(lease_changes, edge_changes));
    // Every Lease as last seen, and since when it looked so: members are live, and an
    // edge taken over from a replica that died is taken, as soon as its Lease has expired
    // as seen here, not after a further lease duration of watching it.
    let mut clock = LeaseClock::default();
    let mut fences: HashMap<String, Task> = HashMap::new();
    let mut reported_shared = BTreeSet::new();
    tracing::info!(member = %me, "sharing edges with the other installer replicas");
    let mut wake = config.leader.retry_period;
    loop {
        // A change of a Lease or an Edge, a live Lease falling silent, or a retry period
        // at the latest; bursts of renewals are taken in together.
        tokio::select! {
            change = changes.next() => {
                if let Some(Err(error)) = change {
                    tracing::warn!(%error, "watching the installer's Leases or the Edges");
                }
                tokio::time::sleep(COALESCE).await;
            }
            () = tokio::time::sleep(wake) => {}
        }
        while let Some(Some(_)) = changes.next().now_or_never() {}
        if !(leases_listed.is_set() && edges_listed.is_set()) {
            wake = config.leader.retry_period;
            continue;
        }
        let now = Instant::now();
        let listed_leases = lease_store.state();
        clock.see(listed_leases.iter().map(|lease| lease.as_ref()), now);
        wake = clock
            .next_silence(now)
            .map_or(config.leader.retry_period, |at| {
                (at - now + SILENCE_MARGIN).min(config.leader.retry_period)
            });
        let live = clock.live_members(&base, now);
        let names: BTreeSet<String> = edge_store.state().iter().map(|e| e.name_any()).collect();
        // Two Edges whose fencing Lease names are one (a long name cut and hashed, and
        // another spelled like the result): neither is worked, and both count as without
        // an owner, so the alert says so rather than one edge silently waiting.
        let mut by_lease: HashMap<String, Vec<&String>> = HashMap::new();
        for edge in &names {
            by_lease
                .entry(edge_lease(&base, edge))
                .or_default()
                .push(edge);
        }
        let shared: BTreeSet<String> = by_lease
            .values()
            .filter(|edges| edges.len() > 1)
            .flatten()
            .map(|edge| (*edge).clone())
            .collect();
        if shared != reported_shared {
            if !shared.is_empty() {
                tracing::error!(edges = ?shared, "these Edges' names give one fencing Lease name: none of them is worked; rename one");
            }
            reported_shared = shared.clone();
        }
        // A fence whose Lease was lost ends; the edge may be taken again below.
        fences.retain(|_, task| !task.is_finished());
        // An installer of the removed leader-standby mode still leads (an upgrade that did
        // not scale it to 0 first): it works every edge without their Leases, so this
        // replica works none until it is gone, and says so in /readyz (ADR 44).
        let old_leader = clock
            .live_holder(&base, now)
            .filter(|leader| {
                leader_outside_membership(&base, leader, &clock.with_membership(&base))
            })
            .map(str::to_owned);
        if old_leader != shards.old_mode_leader() {
            match &old_leader {
                Some(leader) => {
                    tracing::warn!(%leader, "an installer of the leader-standby mode works every edge: this replica works none until it is gone; scale the old installer to 0 (docs/operations.md, \"Upgrading from the leader-standby mode\")")
                }
                None => tracing::info!(
                    "no installer of the leader-standby mode leads any more: sharing the edges"
                ),
            }
            shards.set_old_mode_leader(old_leader.clone());
        }
        let standing_down = old_leader.is_some();
        let gone: Vec<String> = fences
            .keys()
            .filter(|edge| standing_down || !names.contains(*edge) || shared.contains(*edge))
            .cloned()
            .collect();
        for edge in gone {
            give_back(&hub, &config, &shards, &mut fences, &edge).await;
        }
        for edge in names
            .iter()
            .filter(|edge| !standing_down && !shared.contains(*edge))
        {
            match edge_step(edge, &me, &live, fences.contains_key(edge)) {
                EdgeStep::Acquire => {
                    tracing::info!(%edge, members = live.len(), "the edge is this replica's: taking its Lease");
                    let lease = edge_lease(&base, edge);
                    fences.insert(
                        edge.clone(),
                        Task::spawn(fence(
                            Elector::with_holder_seen(
                                hub.clone(),
                                config.lease_config(lease.clone()),
                                clock.holder_seen(&lease),
                            ),
                            shards.clone(),
                            edge.clone(),
                        )),
                    );
                }
                EdgeStep::Release => {
                    tracing::info!(%edge, members = live.len(), "the edge is another replica's now: giving its Lease back");
                    give_back(&hub, &config, &shards, &mut fences, edge).await;
                }
                EdgeStep::Keep | EdgeStep::Leave => {}
            }
        }
        metrics.edges_held.set(shards.held().len() as i64);
        metrics.installer_members.set(live.len() as i64);
        // The hub leader counts the Edges no replica holds the Lease of, from this same
        // listing (the ProvidersEdgeWithoutInstaller alert fires on it).
        if shards.leads() {
            let without = names
                .iter()
                .filter(|edge| {
                    shared.contains(*edge)
                        || clock.live_holder(&edge_lease(&base, edge), now).is_none()
                })
                .count();
            metrics.edges_without_owner.set(without as i64);
        }
    }
}

/// Stops working `edge` (its writes are fenced from this moment), then releases its Lease
/// so the new owner takes it at once.
async fn give_back(
    hub: &Client,
    config: &ShardConfig,
    shards: &Shards,
    fences: &mut HashMap<String, Task>,
    edge: &str,
) {
    // Ended before the edge is dropped: a renewal in flight must not put it back.
    if let Some(fence) = fences.remove(edge) {
        fence.stop().await;
    }
    shards.dropped(edge);
    Elector::new(
        hub.clone(),
        config.lease_config(edge_lease(&config.leader.name, edge)),
    )
    .release()
    .await;
}

/// Takes the edge's Lease (once free, released or expired), then holds it, telling
/// `shards` of every renewal, until it is lost.
async fn fence(mut elector: Elector, shards: Arc<Shards>, edge: String) {
    elector.acquire().await;
    shards.renewed(&edge, Instant::now());
    tracing::info!(%edge, "holding the edge's Lease: working it");
    elector.hold_reporting(|at| shards.renewed(&edge, at)).await;
    shards.dropped(&edge);
    tracing::warn!(%edge, "lost the edge's Lease: no longer working it");
}

/// Holds this replica's membership Lease for as long as the process runs: taken again
/// whenever a renewal fails past the renew deadline.
async fn keep_membership(hub: Client, lease: LeaseConfig, shards: Arc<Shards>) {
    let mut elector = Elector::new(hub, lease);
    loop {
        elector.acquire().await;
        shards.set_member(true);
        elector.hold().await;
        shards.set_member(false);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Gives back every edge Lease this replica holds, the leader Lease if it holds it, and its
/// membership, so that the others
/// take its edges at once (a rolling restart), instead of after the Leases expire.
pub async fn leave(hub: &Client, shards: &Shards) {
    let config = shards.config();
    let held = shards.taken();
    for edge in held {
        shards.dropped(&edge);
        Elector::new(
            hub.clone(),
            config.lease_config(edge_lease(&config.leader.name, &edge)),
        )
        .release()
        .await;
    }
    // The leader Lease too, if this replica holds it, so the hub-wide duties move at once.
    Elector::new(hub.clone(), config.leader.clone())
        .release()
        .await;
    Elector::new(
        hub.clone(),
        config.lease_config(member_lease(&config.leader.name, &config.leader.identity)),
    )
    .release()
    .await;
}
