//! Which edges this replica may write to (ADR 40): those whose fencing Lease it renewed
//! within the renew deadline, which ends before the Lease can expire, so a replica frozen
//! past it writes nothing once it runs again. The Leases themselves are taken and given
//! back by the process layer (`process::shards`); every layer that writes to an edge asks
//! here first.

use std::{
    collections::{BTreeSet, HashMap},
    sync::Mutex,
};

use providers_shared::installer::edge_owners::{member_lease, member_of_lease};
use tokio::{sync::watch, time::Instant};

use crate::support::config::LeaseConfig;
use providers_runtime::locks::Locked;

/// The leases of sharding: the leader Lease's settings, whose name is the base of the
/// membership and edge Leases.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    pub leader: LeaseConfig,
}

impl ShardConfig {
    pub fn lease_config(&self, name: String) -> LeaseConfig {
        LeaseConfig {
            name,
            ..self.leader.clone()
        }
    }

    /// This replica's name among the members (its identity as an object name part).
    pub fn me(&self) -> String {
        let lease = member_lease(&self.leader.name, &self.leader.identity);
        member_of_lease(&self.leader.name, &lease)
            .unwrap_or_default()
            .to_owned()
    }
}

/// Which edges this replica may write to.
pub struct Shards {
    config: ShardConfig,
    /// Edges whose fencing Lease this replica holds, and when it last renewed each.
    held: Mutex<HashMap<String, Instant>>,
    /// The Edges that exist, once listed: a Workspace of an edge that does not is the hub
    /// leader's to answer (there is no edge Lease to hold).
    existing: Mutex<Option<BTreeSet<String>>>,
    /// When this replica last renewed the leader Lease, while it leads.
    leading: Mutex<Option<Instant>>,
    changed: watch::Sender<u64>,
    /// The holder of the leader Lease when it is an installer of the removed
    /// leader-standby mode (no membership Lease): this replica then works no edge.
    old_mode_leader: Mutex<Option<String>>,
    /// Whether this replica holds its membership Lease: it runs for the leader Lease only
    /// then, so that the leader of the hub-wide duties is always one the others count.
    member: watch::Sender<bool>,
}

impl Shards {
    /// Edges shared out with `config`'s Leases; none held until their Leases are taken.
    pub fn new(config: ShardConfig) -> Self {
        Self {
            config,
            held: Mutex::default(),
            existing: Mutex::default(),
            leading: Mutex::default(),
            old_mode_leader: Mutex::default(),
            changed: watch::Sender::new(0),
            member: watch::Sender::new(false),
        }
    }

    pub fn config(&self) -> &ShardConfig {
        &self.config
    }

    /// Whether this replica may write to `edge` (or to the status of a Workspace of it)
    /// now: while it renewed the edge's Lease within the renew deadline.
    /// A Workspace of an edge that does not exist is written by the hub leader.
    pub fn may_write(&self, edge: &str) -> bool {
        if self.holds(edge) {
            return true;
        }
        let missing = self
            .existing
            .locked()
            .as_ref()
            .is_some_and(|existing| !existing.contains(edge));
        missing && self.leads()
    }

    /// Whether this replica holds `edge`'s Lease now: what working an Edge that exists
    /// takes (its worker, its probe, its status).
    pub fn holds(&self, edge: &str) -> bool {
        self.held
            .locked()
            .get(edge)
            .is_some_and(|renewed| renewed.elapsed() < self.config.leader.renew_deadline)
    }

    /// The Edges that exist, from the Edge watch's first list (`None` until then).
    pub fn set_existing(&self, edges: Option<BTreeSet<String>>) {
        *self.existing.locked() = edges;
    }

    /// An Edge appeared (`true`) or went, once the first list is in.
    pub fn edge_exists(&self, edge: &str, exists: bool) {
        if let Some(existing) = self.existing.locked().as_mut() {
            if exists {
                existing.insert(edge.to_owned());
            } else {
                existing.remove(edge);
            }
        }
    }

    /// Whether this replica leads the hub-wide duties now (renewed within the deadline).
    pub fn leads(&self) -> bool {
        self.leading
            .locked()
            .is_some_and(|renewed| renewed.elapsed() < self.config.leader.renew_deadline)
    }

    /// This replica renewed the leader Lease at `at` (`None`: it no longer leads).
    pub fn set_leading(&self, at: Option<Instant>) {
        *self.leading.locked() = at;
    }

    /// The edges this replica may write to now.
    pub fn held(&self) -> BTreeSet<String> {
        let deadline = self.config.leader.renew_deadline;
        self.held
            .locked()
            .iter()
            .filter(|(_, renewed)| renewed.elapsed() < deadline)
            .map(|(edge, _)| edge.clone())
            .collect()
    }

    /// Returns once this replica holds its membership Lease.
    pub async fn until_member(&self) {
        let mut member = self.member.subscribe();
        // The sender lives as long as `self`, so the wait ends only when it is a member.
        let _ = member.wait_for(|held| *held).await;
    }

    /// Tells when the edges held change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    pub fn renewed(&self, edge: &str, at: Instant) {
        let new = self.held.locked().insert(edge.to_owned(), at).is_none();
        if new {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    pub fn dropped(&self, edge: &str) {
        if self.held.locked().remove(edge).is_some() {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// This replica took (`true`) or lost its membership Lease.
    pub fn set_member(&self, member: bool) {
        self.member.send_replace(member);
    }

    /// Every edge whose Lease this replica took and has not given back, renewed lately or
    /// not: what it gives back on the way out.
    pub fn taken(&self) -> Vec<String> {
        self.held.locked().keys().cloned().collect()
    }

    /// The live holder of the leader Lease, when it is an installer of the removed
    /// leader-standby mode.
    pub fn old_mode_leader(&self) -> Option<String> {
        self.old_mode_leader.locked().clone()
    }

    /// The sharding round saw an installer of the leader-standby mode lead (`Some`), or
    /// none any more.
    pub fn set_old_mode_leader(&self, leader: Option<String>) {
        *self.old_mode_leader.locked() = leader;
    }
}
