//! The API client both subcommands build from their command line.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use http::{HeaderValue, header::USER_AGENT};
use kube::{Client, Config};

// Both carry the workspace's version, which every crate of it shares (`version.workspace`).
/// The installer's User-Agent, and so the field manager of its writes.
pub const INSTALLER_AGENT: &str = concat!("providers-installer/", env!("CARGO_PKG_VERSION"));
/// The admission webhook's User-Agent.
pub const WEBHOOK_AGENT: &str = concat!("providers-webhook/", env!("CARGO_PKG_VERSION"));

/// Names the component in every request's User-Agent. The API server takes a write's field
/// manager from it when the write names none (otherwise the managed fields say `unknown`),
/// and audit logs tell the components apart by it.
pub fn identify(config: &mut Config, agent: &'static str) {
    config
        .headers
        .push((USER_AGENT, HeaderValue::from_static(agent)));
}

/// Where the hub's API is.
#[derive(Args, Clone, Debug)]
pub struct ClientArgs {
    /// Path of a kubeconfig for the hub; in a cluster, the Pod's service account is used.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

impl ClientArgs {
    /// The client configuration: the kubeconfig given, or the Pod's service account.
    pub async fn config(&self) -> anyhow::Result<Config> {
        match &self.kubeconfig {
            Some(path) => {
                let kubeconfig = kube::config::Kubeconfig::read_from(path)
                    .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
                Ok(Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?)
            }
            None => Config::infer()
                .await
                .context("no kubeconfig: pass --kubeconfig or run in a cluster"),
        }
    }

    /// A client for the hub that says it is `agent`.
    pub async fn client(&self, agent: &'static str) -> anyhow::Result<Client> {
        let mut config = self.config().await?;
        identify(&mut config, agent);
        Client::try_from(config).context("cannot build the hub client")
    }
}
