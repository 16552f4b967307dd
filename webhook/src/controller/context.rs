//! What every part of the controller shares.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use kube::Client;
use providers::installer::Settings;

use super::{
    lease::LeaseConfig,
    shards::{ShardConfig, Shards},
};

use super::{
    credential::HubEndpoint, edges::Edges, event_recorder::EventRecorder, metrics::Metrics,
    published_keys::Keys, readiness::ControllerReadiness,
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
    /// Consecutive backoffs per Workspace (`namespace/name`).
    backoff: Mutex<HashMap<String, u32>>,
    /// The resourceVersion of each Workspace as the installer's last write of it left it,
    /// until the watch cache has it too.
    written: Mutex<HashMap<String, String>>,
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
            backoff: Mutex::new(HashMap::new()),
            written: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the watch cache's copy of a Workspace may be older than the installer's own
    /// last write of it; forgets the write once the cache has it.
    pub fn cache_behind(&self, key: &str, cached_version: Option<&str>) -> bool {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        match written.get(key) {
            None => false,
            Some(version) if Some(version.as_str()) == cached_version => {
                written.remove(key);
                false
            }
            Some(_) => true,
        }
    }

    /// Remembers the resourceVersion the installer's last write of a Workspace left.
    pub fn wrote(&self, key: &str, version: Option<&str>) {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        match version {
            Some(version) => {
                written.insert(key.to_owned(), version.to_owned());
            }
            None => {
                written.remove(key);
            }
        }
    }

    /// The next delay for a Workspace that keeps waiting on a transient problem:
    /// 1 s, 2 s, 4 s, ... up to 60 s.
    pub fn backoff(&self, key: &str) -> std::time::Duration {
        let Ok(mut map) = self.backoff.lock() else {
            return std::time::Duration::from_secs(5);
        };
        let count = map.entry(key.to_owned()).or_insert(0);
        let seconds = 1u64 << (*count).min(6);
        *count = count.saturating_add(1);
        std::time::Duration::from_secs(seconds.min(60))
    }

    /// Forgets the backoff of a Workspace that made progress.
    pub fn reset_backoff(&self, key: &str) {
        if let Ok(mut map) = self.backoff.lock() {
            map.remove(key);
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
