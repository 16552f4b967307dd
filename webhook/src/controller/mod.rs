//! The installer controller: a thin shell around `providers::installer`.
//!
//! One replica leads at a time (a coordination.k8s.io Lease). The leader's term runs the
//! Workspace controller, one probe and Job watch per Edge, and a watch of the published
//! sealing keys; when the term ends, all of it is dropped. Every decision is taken by
//! `providers::installer::decide` from a fresh read of the Workspace and its edge objects.

mod context;
mod credential;
mod edge_cache;
mod edge_logs;
mod edges;
mod error;
mod execute;
mod fault;
mod helm_release;
mod keys;
mod lease;
mod metrics;
mod observe;
mod reconcile;
mod runner_log;
mod sweep;
mod term;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use clap::Args;
use kube::Client;
use providers::installer::{DEFAULT_HELM_IMAGE, Settings};
use tokio::signal::unix::{SignalKind, signal};

use self::{context::Context, lease::Elector};

#[derive(Args, Clone, Debug)]
pub struct ControllerArgs {
    /// Path of a kubeconfig for the hub; in a cluster, the Pod's service account is used.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The controller's namespace on the hub: its Lease and the sealing keys ConfigMap.
    #[arg(long, env = "PROVIDERS_NAMESPACE", default_value = "providers-system")]
    pub namespace: String,
    /// The namespace of the edges' kubeconfig Secrets: the only one where the installer
    /// reads Secrets. An Edge whose Secret is elsewhere is not connected.
    #[arg(
        long,
        env = "PROVIDERS_EDGE_CREDENTIALS_NAMESPACE",
        default_value = "providers-edges"
    )]
    pub edge_credentials_namespace: String,
    /// The ConfigMap of published sealing public keys (entries `<keyID>.pem`).
    #[arg(long, default_value = "providers-sealing-keys")]
    pub keys_config_map: String,
    /// The Lease that elects the leader.
    #[arg(long, default_value = "providers-installer")]
    pub lease_name: String,
    /// How long a leader's Lease lasts without renewal, in seconds.
    #[arg(long, default_value_t = 15)]
    pub lease_duration: u64,
    /// How long a leader keeps trying to renew before it steps down, in seconds.
    #[arg(long, default_value_t = 10)]
    pub renew_deadline: u64,
    /// How often to try to acquire or renew the Lease, in seconds.
    #[arg(long, default_value_t = 2)]
    pub retry_period: u64,
    /// This replica's name in the Lease (default: the host name and process ID).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// The runner's image; it must provide `helm`.
    #[arg(long, env = "PROVIDERS_HELM_IMAGE", default_value = DEFAULT_HELM_IMAGE)]
    pub helm_image: String,
    /// Helm's --wait strategy.
    #[arg(long, default_value = "watcher", value_parser = ["watcher", "hookOnly", "legacy"])]
    pub helm_wait: String,
    /// The runner Job's activeDeadlineSeconds.
    #[arg(long, default_value_t = 900)]
    pub job_deadline: i64,
    /// How long a preparation may stay without its Job before it is redone, in seconds.
    #[arg(long, default_value_t = 300)]
    pub preparation_ttl: i64,
    /// How many attempt records each Workspace's status keeps.
    #[arg(long, default_value_t = 20)]
    pub attempt_history: usize,
    /// Of how many succeeded attempts per Workspace the plan is kept, for
    /// `kubectl provider rollback`.
    #[arg(long, default_value_t = 5)]
    pub rollback_history: usize,
    /// How often an installed release is compared with what its attempt left on the edge,
    /// in seconds (0: never). A change of Helm's records is checked as soon as it is seen;
    /// this catches what a watch missed. Each Workspace's time is spread by up to a tenth.
    #[arg(long, default_value_t = 300)]
    pub drift_interval: u64,
    /// Of how many failed attempts per Workspace the runner's log is kept on the hub.
    #[arg(long, default_value_t = 5)]
    pub runner_log_history: usize,
    /// Address of the plain-HTTP /metrics, /healthz and /readyz endpoints.
    #[arg(long, env = "PROVIDERS_METRICS_LISTEN", default_value = "0.0.0.0:8080")]
    pub metrics_listen: SocketAddr,
    /// Workspaces reconciled at the same time.
    #[arg(long, default_value_t = 16)]
    pub concurrency: u16,
    /// How often a Ready edge is probed, in seconds.
    #[arg(long, default_value_t = 10)]
    pub edge_probe_interval: u64,
    /// The longest wait between probes of an unreachable edge, in seconds.
    #[arg(long, default_value_t = 60)]
    pub edge_probe_max_backoff: u64,
    /// How often each Ready edge is swept for objects of Workspaces gone from the hub
    /// without their cleanup, in seconds (also once at the start of every leader term).
    #[arg(long, default_value_t = 600)]
    pub orphan_sweep_interval: u64,
    /// How often every Workspace is reconciled even without a change, in seconds.
    #[arg(long, default_value_t = 600)]
    pub resync: u64,
    /// The hub API URL written into providers' runtime credentials (default: the URL
    /// this controller uses).
    #[arg(long)]
    pub hub_server: Option<String>,
    /// The CA (PEM) of the hub API for providers' runtime credentials (default: the CA
    /// this controller trusts).
    #[arg(long)]
    pub hub_ca_file: Option<PathBuf>,
    /// Lifetime of a provider's runtime credential token, in seconds.
    #[arg(long, default_value_t = 365 * 24 * 3600)]
    pub runtime_credential_ttl: i64,
    /// Accept edge kubeconfigs whose user runs a program (`exec`) or a plugin
    /// (`auth-provider`) to get its credential. Off by default: such a kubeconfig would
    /// run that program inside the installer.
    #[arg(long)]
    pub allow_edge_kubeconfig_exec: bool,
    /// Only Workspaces matching this label selector (empty: all), to shard or canary.
    #[arg(long, default_value = "")]
    pub workspace_selector: String,
}

pub async fn run(args: ControllerArgs) -> anyhow::Result<()> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig: pass --kubeconfig or run in a cluster")?,
    };
    let hub_server = args.hub_server.clone().unwrap_or_else(|| {
        config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_owned()
    });
    let hub_ca_pem = match &args.hub_ca_file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --hub-ca-file {}", path.display()))?,
        None => credential::pem_of(config.root_cert.as_deref().unwrap_or_default()),
    };
    let hub = Client::try_from(config).context("cannot build the hub client")?;
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    let settings = Settings {
        helm_image: args.helm_image.clone(),
        helm_wait: args.helm_wait.clone(),
        job_deadline_seconds: args.job_deadline,
        preparation_ttl_seconds: args.preparation_ttl,
        attempt_history: args.attempt_history,
        rollback_history: args.rollback_history,
        drift_interval_seconds: args.drift_interval,
    };
    let metrics = Arc::new(metrics::Metrics::new());
    let listener = tokio::net::TcpListener::bind(args.metrics_listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.metrics_listen))?;
    tracing::info!(listen = %args.metrics_listen, "serving /metrics, /healthz and /readyz");
    tokio::spawn(metrics::serve(listener, metrics.clone()));

    let context = Arc::new(Context::new(
        hub.clone(),
        args.clone(),
        settings,
        metrics.clone(),
        identity.clone(),
        credential::HubEndpoint {
            server: hub_server,
            ca_pem: hub_ca_pem,
            ttl_seconds: args.runtime_credential_ttl,
        },
    ));
    let mut elector = Elector::new(
        hub,
        lease::LeaseConfig {
            namespace: args.namespace.clone(),
            name: args.lease_name.clone(),
            identity: identity.clone(),
            duration: Duration::from_secs(args.lease_duration),
            renew_deadline: Duration::from_secs(args.renew_deadline),
            retry_period: Duration::from_secs(args.retry_period),
        },
    );
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    tracing::info!(%identity, lease = %args.lease_name, "installer controller started; waiting to lead");
    loop {
        tokio::select! {
            () = elector.acquire() => {}
            _ = terminate.recv() => return Ok(()),
            _ = interrupt.recv() => return Ok(()),
        }
        tracing::info!(%identity, "leading: starting the term");
        metrics.leader.set(1);
        let term = tokio::spawn(term::run(context.clone()));
        let abort = term.abort_handle();
        let stop = tokio::select! {
            () = elector.hold() => {
                tracing::warn!(%identity, "lost the lease: stopping the term");
                false
            }
            ended = term => {
                match ended {
                    Ok(Ok(())) => tracing::error!("the term ended on its own"),
                    Ok(Err(error)) => tracing::error!(error = format!("{error:#}"), "the term failed"),
                    Err(error) => tracing::error!(%error, "the term panicked"),
                }
                elector.release().await;
                anyhow::bail!("the leader's term ended unexpectedly; exiting so the Pod restarts");
            }
            _ = terminate.recv() => true,
            _ = interrupt.recv() => true,
        };
        abort.abort();
        metrics.leader.set(0);
        if stop {
            elector.release().await;
            tracing::info!("released the lease; exiting");
            return Ok(());
        }
    }
}

fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "installer".to_owned());
    format!("{host}-{}", std::process::id())
}
