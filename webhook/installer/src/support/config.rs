//! The installer's configuration, typed: what the command line asked for, read once into
//! durations and settings, so nothing below the process parses or bounds an argument.

use std::time::Duration;

use k8s_openapi::jiff::SignedDuration;

/// Everything a replica's run and its reconciles are configured with.
#[derive(Clone, Debug)]
pub struct InstallerConfig {
    /// The installer's namespace on the hub: its Leases and the sealing keys ConfigMap.
    pub namespace: String,
    /// The ConfigMap of published sealing public keys.
    pub keys_config_map: String,
    /// Only Workspaces matching this label selector (empty: all).
    pub workspace_selector: String,
    /// Workspaces reconciled at the same time.
    pub concurrency: u16,
    /// How often every Workspace is reconciled even without a change (at least a second).
    pub resync: Duration,
    /// Of how many failed attempts per Workspace the runner's log is kept on the hub.
    pub runner_log_history: usize,
    /// The leader Lease of the hub-wide duties, whose name is the base of the membership
    /// and edge fencing Leases.
    pub leader: LeaseConfig,
    /// How each edge is probed and connected to.
    pub probe: ProbeSettings,
    /// How often each held edge is swept for the objects of Workspaces gone from the hub.
    pub orphan_sweep_interval: Duration,
    /// How often the hub is swept for PlanValues no plan refers to.
    pub plan_values_sweep_interval: Duration,
    /// How long after a plan referring to them was sealed PlanValues are kept regardless.
    pub plan_values_grace: SignedDuration,
}

/// How each edge is probed and connected to.
#[derive(Clone, Debug)]
pub struct ProbeSettings {
    /// How often a Ready edge is probed.
    pub interval: Duration,
    /// The longest wait between probes of an unreachable edge.
    pub max_backoff: Duration,
    /// The only namespace an edge's kubeconfig Secret may be in.
    pub credentials_namespace: String,
    /// Whether an edge's kubeconfig may run a program for its credentials.
    pub allow_kubeconfig_exec: bool,
    /// How many watch streams share one connection to an edge.
    pub watch_streams_per_connection: u16,
}

/// The settings of a Lease this replica takes and holds.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    pub duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}
