//! A kube client from the kubectl flags: kubeconfig, context, cluster, user, namespace,
//! impersonation, request timeout.

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
    /// How long the client waits for an answer (`--request-timeout`); watches end their
    /// requests before it.
    pub read_timeout: Option<Duration>,
}

/// kubectl gives up connecting after 30 s; an unreachable server should not hang a command.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The client's timeouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Option<Duration>,
    /// `None`: leave the kubeconfig's default.
    pub read: Option<Option<Duration>>,
    pub write: Option<Option<Duration>>,
}

/// The timeouts `--request-timeout` asks for: absent, the defaults (connect within 30 s);
/// `0`, no limit on answers; otherwise that limit on connecting and on each answer.
pub fn timeouts(request_timeout: Option<Duration>) -> Timeouts {
    match request_timeout {
        None => Timeouts {
            connect: Some(CONNECT_TIMEOUT),
            read: None,
            write: None,
        },
        Some(Duration::ZERO) => Timeouts {
            connect: Some(CONNECT_TIMEOUT),
            read: Some(None),
            write: Some(None),
        },
        Some(limit) => Timeouts {
            connect: Some(limit.min(CONNECT_TIMEOUT)),
            read: Some(Some(limit)),
            write: Some(Some(limit)),
        },
    }
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
    let limits = timeouts(flags.request_timeout);
    config.connect_timeout = limits.connect;
    if let Some(read) = limits.read {
        config.read_timeout = read;
        // Count from the request, not from when a pooled connection went idle.
        config.reset_reader_on_write = read.is_some();
    }
    if let Some(write) = limits.write {
        config.write_timeout = write;
    }
    let read_timeout = config.read_timeout;
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
        read_timeout,
    })
}

async fn load(flags: &GlobalFlags) -> anyhow::Result<Config> {
    let options = KubeConfigOptions {
        context: flags.context.clone(),
        cluster: flags.cluster.clone(),
        user: flags.user.clone(),
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
            Err(error) => {
                return Err(user_error(
                    format!("cannot read a kubeconfig: {error}"),
                    Some("pass --kubeconfig PATH or set KUBECONFIG".to_owned()),
                ));
            }
        },
    };
    if let Some(missing) = missing_entry(&kubeconfig, flags) {
        return Err(user_error(
            format!("cannot use the kubeconfig ({missing}): it has no such entry"),
            Some("kubectl config view lists its contexts, clusters and users".to_owned()),
        ));
    }
    Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| {
            let chosen: Vec<String> = [
                ("context", &flags.context),
                ("cluster", &flags.cluster),
                ("user", &flags.user),
            ]
            .into_iter()
            .filter_map(|(what, name)| name.as_ref().map(|n| format!("{what} {n}")))
            .collect();
            let which = if chosen.is_empty() {
                String::new()
            } else {
                format!(" ({})", chosen.join(", "))
            };
            user_error(format!("cannot use the kubeconfig{which}: {e}"), None)
        })
}

/// The `--cluster` or `--user` the kubeconfig does not have (kube would fall back to no
/// credentials for an unknown user; kubectl refuses, and so does the plugin).
fn missing_entry(kubeconfig: &Kubeconfig, flags: &GlobalFlags) -> Option<String> {
    if let Some(cluster) = &flags.cluster
        && !kubeconfig.clusters.iter().any(|c| &c.name == cluster)
    {
        return Some(format!("cluster {cluster}"));
    }
    if let Some(user) = &flags.user
        && !kubeconfig.auth_infos.iter().any(|u| &u.name == user)
    {
        return Some(format!("user {user}"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_or_user_must_be_in_the_kubeconfig() {
        let kubeconfig: Kubeconfig = serde_json::from_value(serde_json::json!({
            "clusters": [{"name": "hub", "cluster": {"server": "https://h"}}],
            "users": [{"name": "alice", "user": {"token": "t"}}],
        }))
        .unwrap();
        let flags = |cluster: Option<&str>, user: Option<&str>| GlobalFlags {
            cluster: cluster.map(str::to_owned),
            user: user.map(str::to_owned),
            ..GlobalFlags::default()
        };
        assert_eq!(
            missing_entry(&kubeconfig, &flags(Some("hub"), Some("alice"))),
            None
        );
        assert_eq!(
            missing_entry(&kubeconfig, &flags(Some("edge"), None)).as_deref(),
            Some("cluster edge")
        );
        assert_eq!(
            missing_entry(&kubeconfig, &flags(None, Some("bob"))).as_deref(),
            Some("user bob")
        );
    }

    #[test]
    fn request_timeout_reads_like_kubectl() {
        assert_eq!(
            timeouts(None),
            Timeouts {
                connect: Some(CONNECT_TIMEOUT),
                read: None,
                write: None
            }
        );
        assert_eq!(
            timeouts(Some(Duration::ZERO)),
            Timeouts {
                connect: Some(CONNECT_TIMEOUT),
                read: Some(None),
                write: Some(None)
            }
        );
        let short = Duration::from_secs(5);
        assert_eq!(
            timeouts(Some(short)),
            Timeouts {
                connect: Some(short),
                read: Some(Some(short)),
                write: Some(Some(short))
            }
        );
        let long = Duration::from_secs(120);
        assert_eq!(timeouts(Some(long)).connect, Some(CONNECT_TIMEOUT));
    }
}
