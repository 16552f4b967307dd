//! The installer's Prometheus metrics, served on the admin port's `GET /metrics`
//! (`crate::runtime::admin`).
//!
//! Label values come from small fixed sets (failure reasons, error kinds, edge names),
//! never from Workspace content.

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::{Registry, Unit},
};

use crate::runtime::admin::{self, Exposition};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EdgeLabels {
    pub edge: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SweptLabels {
    pub edge: String,
    pub action: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabels {
    pub action: String,
}

fn reconcile_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    ])
}

#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Attempts whose Job was created on the edge.
    pub attempts_started: Counter,
    /// Attempts whose Job completed.
    pub attempts_succeeded: Counter,
    /// Attempts that failed or were refused, by reason.
    pub attempts_failed: Family<ReasonLabels, Counter>,
    /// Reconciles that ended in an error, by kind.
    pub reconcile_errors: Family<ReasonLabels, Counter>,
    /// How long one reconcile took, all passes included.
    pub reconcile_duration: Histogram,
    /// Actions taken, by name.
    pub actions: Family<ActionLabels, Counter>,
    /// Live reads of a Workspace: before revoking or deleting, after an interrupted write,
    /// or when the watch cache had not yet seen the installer's own last write.
    pub workspace_reads: Counter,
    /// 1 while this replica leads.
    pub leader: Gauge,
    /// With `--shard-edges`: the edges whose fencing Lease this replica holds.
    pub edges_held: Gauge,
    /// With `--shard-edges`: the live installer replicas this one sees.
    pub installer_members: Gauge,
    /// With `--shard-edges`, on the hub leader: the Edges no replica holds the Lease of.
    pub edges_without_owner: Gauge,
    /// With `--shard-edges`: 1 while a leader without the flag runs, so this replica works
    /// no edge (ADR 40, "Switching modes by a rolling update").
    pub standing_down: Gauge,
    /// 1 while an edge answered its last probe.
    pub edge_ready: Family<EdgeLabels, Gauge>,
    /// The namespaces whose Secrets the installer watches on an edge (one watch each).
    pub edge_namespace_watches: Family<EdgeLabels, Gauge>,
    /// The kinds of installed releases' objects followed for drift on an edge, per
    /// namespace, by a watch of their own (Secrets ride on the namespace's Secret watch).
    pub edge_follow_watches: Family<EdgeLabels, Gauge>,
    /// The HTTP/2 connections that carry the per-namespace watches on an edge.
    pub edge_watch_connections: Family<EdgeLabels, Gauge>,
    /// Edge objects of Workspaces gone from the hub without their cleanup, removed or
    /// released by the orphan sweep, by edge and action.
    pub orphans_swept: Family<SweptLabels, Counter>,
    /// Installed releases found drifted from what their attempt left, by reason.
    pub drift_found: Family<ReasonLabels, Counter>,
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("providers_installer");
        let attempts_started = Counter::default();
        registry.register(
            "attempts_started",
            "Attempts whose Job was created on the edge",
            attempts_started.clone(),
        );
        let attempts_succeeded = Counter::default();
        registry.register(
            "attempts_succeeded",
            "Attempts whose Job completed",
            attempts_succeeded.clone(),
        );
        let attempts_failed = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "attempts_failed",
            "Attempts that failed or were refused, by condition reason",
            attempts_failed.clone(),
        );
        let reconcile_errors = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "reconcile_errors",
            "Reconciles that ended in an error, by kind",
            reconcile_errors.clone(),
        );
        let reconcile_duration = reconcile_histogram();
        registry.register_with_unit(
            "reconcile_duration",
            "How long one reconcile of a Workspace took",
            Unit::Seconds,
            reconcile_duration.clone(),
        );
        let actions = Family::<ActionLabels, Counter>::default();
        registry.register("actions", "Actions taken, by name", actions.clone());
        let workspace_reads = Counter::default();
        registry.register(
            "workspace_reads",
            "Live reads of a Workspace (before revoking or deleting, after an interrupted write, or when the watch cache lagged the installer's own write)",
            workspace_reads.clone(),
        );
        let leader = Gauge::default();
        registry.register("leader", "1 while this replica leads", leader.clone());
        let edges_held = Gauge::default();
        registry.register(
            "edges_held",
            "With --shard-edges: the edges whose fencing Lease this replica holds",
            edges_held.clone(),
        );
        let edges_without_owner = Gauge::default();
        registry.register(
            "edges_without_owner",
            "With --shard-edges, on the hub leader: the Edges no replica holds the Lease of",
            edges_without_owner.clone(),
        );
        let standing_down = Gauge::default();
        registry.register(
            "standing_down",
            "With --shard-edges: 1 while a leader without the flag runs, so this replica works no edge",
            standing_down.clone(),
        );
        let installer_members = Gauge::default();
        registry.register(
            "members",
            "With --shard-edges: the live installer replicas this one sees",
            installer_members.clone(),
        );
        let edge_ready = Family::<EdgeLabels, Gauge>::default();
        registry.register(
            "edge_ready",
            "1 while the edge answered its last probe",
            edge_ready.clone(),
        );
        let edge_namespace_watches = Family::<EdgeLabels, Gauge>::default();
        registry.register(
            "edge_namespace_watches",
            "The namespaces of the installer's whose Secrets it watches on the edge, one watch each",
            edge_namespace_watches.clone(),
        );
        let edge_follow_watches = Family::<EdgeLabels, Gauge>::default();
        registry.register(
            "edge_follow_watches",
            "The watches of installed releases' objects (one per release namespace and kind, Secrets excepted: their namespace's Secret watch follows them) on the edge",
            edge_follow_watches.clone(),
        );
        let edge_watch_connections = Family::<EdgeLabels, Gauge>::default();
        registry.register(
            "edge_watch_connections",
            "The HTTP/2 connections to the edge that carry the installer's per-namespace watches as streams",
            edge_watch_connections.clone(),
        );
        let orphans_swept = Family::<SweptLabels, Counter>::default();
        registry.register(
            "orphans_swept",
            "Edge objects of Workspaces gone without their cleanup, removed or released by the orphan sweep",
            orphans_swept.clone(),
        );
        let drift_found = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "drift_found",
            "Installed releases found drifted from what their attempt left on the edge, by reason",
            drift_found.clone(),
        );
        Self {
            registry,
            orphans_swept,
            drift_found,
            attempts_started,
            attempts_succeeded,
            attempts_failed,
            reconcile_errors,
            reconcile_duration,
            actions,
            workspace_reads,
            leader,
            edges_held,
            installer_members,
            edges_without_owner,
            standing_down,
            edge_ready,
            edge_namespace_watches,
            edge_follow_watches,
            edge_watch_connections,
        }
    }
}

impl Exposition for Metrics {
    fn encode(&self) -> Result<String, std::fmt::Error> {
        admin::openmetrics(&self.registry)
    }
}

#[cfg(test)]
mod tests;
