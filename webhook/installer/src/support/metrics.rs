//! The installer's Prometheus metrics, served on the admin port's `GET /metrics`
//! (`providers_runtime::admin`).
//!
//! Label values come from small fixed sets (failure reasons, error kinds, edge names),
//! never from Workspace content.

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::{Registry, Unit},
};

use providers_runtime::admin::{self, Exposition};

pub mod api_requests;
pub mod fleet;

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerbLabels {
    pub verb: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    pub edge: String,
    pub phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KeyLabels {
    pub key_id: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PlanLabels {
    pub key_id: String,
    /// `current` (spec.plan) or `kept` (status.attempts[].kept).
    pub plan: String,
}

/// Upper bounds in seconds from a plan's seal to its attempt's result: a chart installs in
/// seconds to minutes; an attempt that waits for its edge can take hours.
const SEAL_TO_RESULT_BUCKETS: [f64; 16] = [
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 10800.0,
    86400.0,
];

fn seal_to_result_histogram() -> Histogram {
    Histogram::new(SEAL_TO_RESULT_BUCKETS)
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
    /// 1 while this replica leads the hub-wide duties.
    pub leader: Gauge,
    /// The edges whose fencing Lease this replica holds.
    pub edges_held: Gauge,
    /// The live installer replicas this one sees.
    pub installer_members: Gauge,
    /// On the leader of the hub-wide duties: the Edges no replica holds the Lease of.
    pub edges_without_owner: Gauge,
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
    /// Objects compared with their release's manifest by a content check, by what was
    /// found (`Same`, `Differs`, `Missing`, `Unread`).
    pub content_checked: Family<ReasonLabels, Counter>,
    /// Time from a plan's seal (`spec.plan.sealedAt`) to its attempt's recorded result, by
    /// result (`Succeeded`, `Failed`, `Rejected`).
    pub seal_to_result: Family<ResultLabels, Histogram, fn() -> Histogram>,
    /// The hub's Workspaces (those this replica's watch selects) by edge and phase, from
    /// the watch cache, kept by [`fleet::Fleet`].
    pub workspaces: Family<PhaseLabels, Gauge>,
    /// Workspaces whose installed release has drifted, by edge.
    pub workspaces_drifted: Family<EdgeLabels, Gauge>,
    /// Workspaces whose installed release has objects of kinds not followed, by edge.
    pub workspaces_unfollowed: Family<EdgeLabels, Gauge>,
    /// Workspaces whose cleanup is outstanding, by edge: an attempt with a result whose
    /// runner identity is not revoked yet, or a Workspace being deleted.
    pub cleanup_backlog: Family<EdgeLabels, Gauge>,
    /// Attempts sealed without a result yet (not being deleted), by edge.
    pub active_attempts: Family<EdgeLabels, Gauge>,
    /// When the oldest of those was sealed (Unix seconds), by edge; absent without one.
    pub oldest_active_attempt_sealed: Family<EdgeLabels, Gauge>,
    /// Live plans (current and kept) by the ID of the key that sealed them.
    pub plans: Family<PlanLabels, Gauge>,
    /// 1 for each key ID published in the sealing keys ConfigMap.
    pub sealing_key_published: Family<KeyLabels, Gauge>,
    /// Requests of the hub client, by Kubernetes verb ([`api_requests::CountRequests`]).
    pub api_requests: Family<VerbLabels, Counter>,
    /// Reconciles running now (at most --concurrency).
    pub reconciles_in_flight: Gauge,
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
        registry.register(
            "leader",
            "1 while this replica leads the hub-wide duties",
            leader.clone(),
        );
        let edges_held = Gauge::default();
        registry.register(
            "edges_held",
            "The edges whose fencing Lease this replica holds",
            edges_held.clone(),
        );
        let edges_without_owner = Gauge::default();
        registry.register(
            "edges_without_owner",
            "On the leader of the hub-wide duties: the Edges no replica holds the Lease of",
            edges_without_owner.clone(),
        );
        let installer_members = Gauge::default();
        registry.register(
            "members",
            "The live installer replicas this one sees",
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
            "The watches of installed releases' objects on the edge: one per release namespace and kind, and one per kind across the edge for ServiceAccounts, Roles and RoleBindings (Secrets are followed by their namespace's Secret watch)",
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
        let content_checked = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "content_checked_objects",
            "Objects of installed releases compared with their manifest by contents, by what was found",
            content_checked.clone(),
        );
        let seal_to_result =
            Family::<ResultLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                seal_to_result_histogram,
            );
        registry.register_with_unit(
            "seal_to_result",
            "Time from a plan's seal to its attempt's recorded result, by result",
            Unit::Seconds,
            seal_to_result.clone(),
        );
        let workspaces = Family::<PhaseLabels, Gauge>::default();
        registry.register(
            "workspaces",
            "Workspaces in the installer's watch cache, by edge and phase (Unobserved: no status yet)",
            workspaces.clone(),
        );
        let workspaces_drifted = Family::<EdgeLabels, Gauge>::default();
        registry.register(
            "workspaces_drifted",
            "Workspaces whose installed release has drifted, by edge",
            workspaces_drifted.clone(),
        );
        let workspaces_unfollowed = Family::<EdgeLabels, Gauge>::default();
        registry.register(
            "workspaces_unfollowed",
            "Workspaces whose installed release has objects of kinds whose drift is not seen (status.unfollowed), by edge",
            workspaces_unfollowed.clone(),
        );
        let cleanup_backlog = Family::<EdgeLabels, Gauge>::default();
        registry.register(
            "cleanup_backlog",
            "Workspaces with cleanup outstanding (a finished attempt's runner identity not yet revoked, or being deleted), by edge",
            cleanup_backlog.clone(),
        );
        let active_attempts = Family::<EdgeLabels, Gauge>::default();
        registry.register(
            "active_attempts",
            "Attempts sealed and without a result yet, by edge",
            active_attempts.clone(),
        );
        let oldest_active_attempt_sealed = Family::<EdgeLabels, Gauge>::default();
        registry.register_with_unit(
            "oldest_active_attempt_sealed_timestamp",
            "When the oldest attempt without a result was sealed, by edge (Unix time)",
            Unit::Seconds,
            oldest_active_attempt_sealed.clone(),
        );
        let plans = Family::<PlanLabels, Gauge>::default();
        registry.register(
            "plans",
            "Live plans by the ID of the key that sealed them, current or kept",
            plans.clone(),
        );
        let sealing_key_published = Family::<KeyLabels, Gauge>::default();
        registry.register(
            "sealing_key_published",
            "1 for each key ID published in the sealing keys ConfigMap",
            sealing_key_published.clone(),
        );
        let api_requests = Family::<VerbLabels, Counter>::default();
        registry.register(
            "api_requests",
            "Requests to the hub's API server, by Kubernetes verb",
            api_requests.clone(),
        );
        let reconciles_in_flight = Gauge::default();
        registry.register(
            "reconciles_in_flight",
            "Reconciles running now (at most --concurrency); Workspaces past that wait in the queue",
            reconciles_in_flight.clone(),
        );
        Self {
            registry,
            api_requests,
            reconciles_in_flight,
            seal_to_result,
            workspaces,
            workspaces_drifted,
            workspaces_unfollowed,
            cleanup_backlog,
            active_attempts,
            oldest_active_attempt_sealed,
            plans,
            sealing_key_published,
            orphans_swept,
            drift_found,
            content_checked,
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
            edge_ready,
            edge_namespace_watches,
            edge_follow_watches,
            edge_watch_connections,
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Exposition for Metrics {
    fn encode(&self) -> Result<String, std::fmt::Error> {
        admin::openmetrics(&self.registry)
    }
}

#[cfg(test)]
mod tests;
