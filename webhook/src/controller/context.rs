//! What every part of the controller shares.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use kube::{
    Client,
    runtime::events::{Recorder, Reporter},
};
use providers::installer::Settings;

use super::{ControllerArgs, credential::HubEndpoint, edges::Edges, keys::Keys, metrics::Metrics};

pub struct Context {
    pub hub: Client,
    pub args: ControllerArgs,
    pub settings: Settings,
    pub metrics: Arc<Metrics>,
    pub endpoint: HubEndpoint,
    pub keys: Keys,
    pub edges: Edges,
    pub recorder: Recorder,
    /// Consecutive backoffs per Workspace (`namespace/name`).
    backoff: Mutex<HashMap<String, u32>>,
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
        let recorder = Recorder::new(
            hub.clone(),
            Reporter {
                controller: "providers-installer".into(),
                instance: Some(identity),
            },
        );
        Self {
            keys: Keys::new(&args.namespace, &args.keys_config_map),
            edges: Edges::default(),
            hub,
            args,
            settings,
            metrics,
            endpoint,
            recorder,
            backoff: Mutex::new(HashMap::new()),
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
