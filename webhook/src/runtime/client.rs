//! The API client both subcommands build from their command line.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use kube::{Client, Config};

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

    /// A client for the hub.
    pub async fn client(&self) -> anyhow::Result<Client> {
        Client::try_from(self.config().await?).context("cannot build the hub client")
    }
}
