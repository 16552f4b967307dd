//! What every part of the controller shares: its typed configuration and the handles of a
//! replica's run (clients, metrics, caches, shards). What is kept of each Workspace between
//! reconciles is `between_reconciles`, the reconciles' own.

use std::sync::Arc;

use kube::Client;
use providers_shared::installer::Settings;

use crate::{
    edge::credential::HubEndpoint,
    edge::{EdgeHandles, Edges},
    reconcile::execute::ExecuteHandles,
    reconcile::observe::ObserveHandles,
    reconcile::published_keys::Keys,
    support::config::InstallerConfig,
    support::event_recorder::EventRecorder,
    support::metrics::Metrics,
    support::ownership::{ShardConfig, Shards},
};

pub struct Context {
    pub hub: Client,
    pub config: InstallerConfig,
    pub settings: Settings,
    pub metrics: Arc<Metrics>,
    pub endpoint: HubEndpoint,
    pub keys: Keys,
    pub edges: Edges,
    pub recorder: EventRecorder,
    /// Which edges this replica may write to: those whose fencing Lease it holds.
    pub shards: Arc<Shards>,
    /// This replica's name (in its Leases, Events and the Edges' status).
    pub identity: String,
}

impl Context {
    pub fn new(
        hub: Client,
        config: InstallerConfig,
        settings: Settings,
        metrics: Arc<Metrics>,
        endpoint: HubEndpoint,
    ) -> Self {
        let identity = config.leader.identity.clone();
        let shards = Shards::new(ShardConfig {
            leader: config.leader.clone(),
        });
        let recorder = EventRecorder::new(hub.clone(), "providers-installer", &identity);
        let edges = Edges::default();
        Self {
            keys: Keys::new(&config.namespace, &config.keys_config_map, metrics.clone()),
            edges,
            hub,
            config,
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
            keys: &self.keys,
            settings: &self.settings,
            metrics: &self.metrics,
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
            runner_log_history: self.config.runner_log_history,
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
            probe: self.config.probe.clone(),
        }
    }
}
