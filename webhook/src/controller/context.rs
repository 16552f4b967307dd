//! What every part of the controller shares: its configuration and the handles of a
//! term (clients, metrics, caches, shards). What it remembers of each Workspace between
//! reconciles is `workspace_memory`, the reconciles' own.

use std::sync::Arc;

use kube::Client;
use providers_shared::installer::Settings;

use super::{
    credential::HubEndpoint,
    edges::{EdgeHandles, Edges, ProbeSettings},
    event_recorder::EventRecorder,
    execute::ExecuteHandles,
    lease::LeaseConfig,
    metrics::Metrics,
    observe::ObserveHandles,
    published_keys::Keys,
    readiness::ControllerReadiness,
    shards::{ShardConfig, Shards},
    sweep::SweepHandles,
    values_sweep::ValuesSweepHandles,
};
use crate::cli::ControllerArgs;

pub struct Context {
    pub hub: Client,
    pub args: ControllerArgs,
    pub settings: Settings,
    pub metrics: Arc<Metrics>,
    pub endpoint: HubEndpoint,
    pub keys: Keys,
    pub edges: Edges,
    /// What `/readyz` says: standby, or leading with its caches synced and edges probed.
    pub readiness: Arc<ControllerReadiness>,
    pub recorder: EventRecorder,
    /// Which edges this replica may write to (every edge, without `--shard-edges`).
    pub shards: Arc<Shards>,
    /// This replica's name (in its Leases, Events and the Edges' status).
    pub identity: String,
}

impl Context {
    pub fn new(
        hub: Client,
        args: ControllerArgs,
        settings: Settings,
        metrics: Arc<Metrics>,
        identity: String,
        endpoint: HubEndpoint,
    ) -> Self {
        let shards = if args.shard_edges {
            Shards::sharded(ShardConfig {
                leader: leader_lease(&args, &identity),
            })
        } else {
            Shards::single()
        };
        let recorder = EventRecorder::new(hub.clone(), "providers-installer", &identity);
        let edges = Edges::default();
        Self {
            keys: Keys::new(&args.namespace, &args.keys_config_map, metrics.clone()),
            readiness: Arc::new(ControllerReadiness::new(edges.clone())),
            edges,
            hub,
            args,
            settings,
            metrics,
            endpoint,
            recorder,
            shards: Arc::new(shards),
            identity,
        }
    }
}

impl Context {
    /// The handles observing reads.
    pub fn observe_handles(&self) -> ObserveHandles<'_> {
        ObserveHandles {
            hub: &self.hub,
            edges: &self.edges,
            keys: &self.keys,
        }
    }

    /// The handles running the actions writes with.
    pub fn execute_handles(&self) -> ExecuteHandles<'_> {
        ExecuteHandles {
            hub: &self.hub,
            endpoint: &self.endpoint,
            metrics: &self.metrics,
            recorder: &self.recorder,
            shards: &self.shards,
            runner_log_history: self.args.runner_log_history,
        }
    }

    /// The handles the Edge watch and the edges' probes work with.
    pub fn edge_handles(&self) -> EdgeHandles {
        EdgeHandles {
            hub: self.hub.clone(),
            edges: self.edges.clone(),
            metrics: self.metrics.clone(),
            shards: self.shards.clone(),
            identity: self.identity.clone(),
            probe: ProbeSettings {
                interval: std::time::Duration::from_secs(self.args.edge_probe_interval.max(1)),
                max_backoff: std::time::Duration::from_secs(
                    self.args.edge_probe_max_backoff.max(1),
                ),
                credentials_namespace: self.args.edge_credentials_namespace.clone(),
                allow_kubeconfig_exec: self.args.allow_edge_kubeconfig_exec,
                watch_streams_per_connection: self.args.edge_watch_streams_per_connection,
            },
        }
    }

    /// The handles the orphan sweep works with.
    pub fn sweep_handles(&self) -> SweepHandles<'_> {
        SweepHandles {
            hub: &self.hub,
            edges: &self.edges,
            metrics: &self.metrics,
            recorder: &self.recorder,
            interval: std::time::Duration::from_secs(self.args.orphan_sweep_interval.max(1)),
        }
    }

    /// The handles the PlanValues sweep works with.
    pub fn values_sweep_handles(&self) -> ValuesSweepHandles<'_> {
        ValuesSweepHandles {
            hub: &self.hub,
            workspaces_listed: self.readiness.workspaces(),
            interval: std::time::Duration::from_secs(self.args.plan_values_sweep_interval.max(1)),
            grace: k8s_openapi::jiff::SignedDuration::from_secs(self.args.plan_values_grace as i64),
        }
    }
}

/// The leader Lease's settings from the command line.
pub fn leader_lease(args: &ControllerArgs, identity: &str) -> LeaseConfig {
    LeaseConfig {
        namespace: args.namespace.clone(),
        name: args.lease_name.clone(),
        identity: identity.to_owned(),
        duration: std::time::Duration::from_secs(args.lease_duration),
        renew_deadline: std::time::Duration::from_secs(args.renew_deadline),
        retry_period: std::time::Duration::from_secs(args.retry_period),
    }
}
