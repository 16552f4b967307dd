//! A kube client from the kubectl flags: kubeconfig, context, namespace, impersonation.

use std::time::Duration;

use anyhow::Context as _;
use kube::{
    Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};

use crate::{cli::GlobalFlags, report::user_error};

/// A client and the namespace commands act in.
pub struct Connection {
    pub client: Client,
    /// `-n`, else the context's namespace, else `default`.
    pub namespace: String,
    /// The API server's URL, for error messages.
    pub server: String,
}

/// Builds the client the flags describe.
pub async fn connect(flags: &GlobalFlags) -> anyhow::Result<Connection> {
    if !flags.as_groups.is_empty() && flags.as_user.is_none() {
        return Err(user_error(
            "--as-group needs --as: the API server impersonates groups only together with a user",
            Some("add --as USER".to_owned()),
        ));
    }
    let mut config = load(flags).await?;
    if let Some(user) = &flags.as_user {
        config.auth_info.impersonate = Some(user.clone());
        config.auth_info.impersonate_groups =
            (!flags.as_groups.is_empty()).then(|| flags.as_groups.clone());
    }
    // kubectl gives up connecting after 30 s by default too; an unreachable server
    // should not hang a command.
    config.connect_timeout = Some(Duration::from_secs(30));
    let namespace = flags
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let server = config.cluster_url.to_string();
    let client = Client::try_from(config).context("building the Kubernetes client")?;
    Ok(Connection {
        client,
        namespace,
        server: server.trim_end_matches('/').to_owned(),
    })
}

async fn load(flags: &GlobalFlags) -> anyhow::Result<Config> {
    let options = KubeConfigOptions {
        context: flags.context.clone(),
        ..KubeConfigOptions::default()
    };
    let kubeconfig = match &flags.kubeconfig {
        Some(path) => Kubeconfig::read_from(path).map_err(|e| {
            user_error(
                format!("cannot read kubeconfig {}: {e}", path.display()),
                None,
            )
        })?,
        None => match Kubeconfig::read() {
            Ok(kubeconfig) => kubeconfig,
            // Inside a pod without a kubeconfig, use the pod's service account, as kubectl does.
            Err(_) if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() => {
                return Config::incluster().map_err(|e| {
                    user_error(
                        format!("cannot use the in-cluster configuration: {e}"),
                        None,
                    )
                });
            }
            Err(e) => {
                return Err(user_error(
                    format!("cannot read a kubeconfig: {e}"),
                    Some("pass --kubeconfig PATH or set KUBECONFIG".to_owned()),
                ));
            }
        },
    };
    Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| {
            let which = flags
                .context
                .as_deref()
                .map(|c| format!(" (context {c})"))
                .unwrap_or_default();
            user_error(format!("cannot use the kubeconfig{which}: {e}"), None)
        })
}
