//! The published sealing keys: a watch of the keys ConfigMap, turned into a Keyring.

use std::sync::{Arc, RwLock};

use futures::{StreamExt, channel::mpsc::UnboundedSender};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    runtime::{WatchStreamExt, watcher},
};
use providers_shared::{api::Workspace, installer::SealCheck, seal::Keyring};

use crate::support::metrics::{KeyLabels, Metrics};
use providers_runtime::locks::ReadWriteLocked;

/// The keyring of the moment, or why there is none.
#[derive(Clone)]
pub struct Keys {
    current: Arc<RwLock<Result<Keyring, String>>>,
    source: String,
    metrics: Arc<Metrics>,
}

impl Keys {
    pub fn new(namespace: &str, name: &str, metrics: Arc<Metrics>) -> Self {
        Self {
            current: Arc::new(RwLock::new(Err(
                "the sealing keys have not been read yet".into()
            ))),
            source: format!("ConfigMap {namespace}/{name}"),
            metrics,
        }
    }

    /// The check of a Workspace's plan with the published keys: the same rules as the
    /// webhook's and `kubectl provider plan --verify`'s.
    pub fn check_seal(&self, workspace: &Workspace) -> SealCheck {
        let current = self.current.read_locked();
        SealCheck::of(workspace, current.as_ref().map_err(String::as_str))
    }

    fn set(&self, value: Result<Keyring, String>) {
        self.metrics.sealing_key_published.clear();
        match &value {
            Ok(keyring) => {
                tracing::info!(
                    keys = ?keyring.key_ids().collect::<Vec<_>>(),
                    "loaded the published sealing keys"
                );
                for key_id in keyring.key_ids() {
                    self.metrics
                        .sealing_key_published
                        .get_or_create(&KeyLabels {
                            key_id: key_id.to_string(),
                        })
                        .set(1);
                }
            }
            Err(why) => tracing::warn!(%why, "no sealing keys"),
        }
        *self.current.write_locked() = value;
    }

    fn keyring_of(&self, config_map: &ConfigMap) -> Result<Keyring, String> {
        let data = config_map.data.clone().unwrap_or_default();
        let pems: Vec<(&String, &String)> =
            data.iter().filter(|(k, _)| k.ends_with(".pem")).collect();
        if pems.is_empty() {
            return Err(format!("{} has no <keyID>.pem entries", self.source));
        }
        Keyring::from_pems(pems.into_iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(|e| format!("{}: {e}", self.source))
    }

    /// Reads the keys of `config_map` as the watch does when it lists it: for unit tests,
    /// which run no watch.
    #[cfg(test)]
    pub fn read(&self, config_map: &ConfigMap) {
        self.set(self.keyring_of(config_map));
    }

    /// Watches the ConfigMap until the replica's run ends; says so on `changed` after every change.
    pub async fn watch(self, api: Api<ConfigMap>, name: String, changed: UnboundedSender<()>) {
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut events = watcher(api, config).default_backoff().boxed();
        let mut initial: Option<ConfigMap> = None;
        while let Some(event) = events.next().await {
            let keyring = match event {
                Ok(watcher::Event::Init) => {
                    initial = None;
                    continue;
                }
                Ok(watcher::Event::InitApply(config_map)) => {
                    initial = Some(config_map);
                    continue;
                }
                Ok(watcher::Event::InitDone) => match initial.take() {
                    Some(config_map) => self.keyring_of(&config_map),
                    None => Err(format!("{} does not exist", self.source)),
                },
                Ok(watcher::Event::Apply(config_map)) => self.keyring_of(&config_map),
                Ok(watcher::Event::Delete(_)) => Err(format!("{} was deleted", self.source)),
                Err(error) => {
                    tracing::warn!(%error, "watching the sealing keys");
                    continue;
                }
            };
            self.set(keyring);
            let _ = changed.unbounded_send(());
        }
    }
}
