//! `providers-webhook controller`: the installer's process. It runs the replica
//! (`providers_installer::process::replica`), which works the edges whose Leases it takes,
//! and gives them back when stopped.

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use k8s_openapi::jiff::SignedDuration;
use kube::Client;
use providers_shared::installer::Settings;

use providers_installer::{
    Context, InstallerConfig, LeaseConfig, ProbeSettings,
    edge::credential,
    process::{readiness::ControllerReadiness, replica, shards},
    support::metrics::{Metrics, api_requests::CountRequests},
};
use providers_runtime::{admin, shutdown::shutdown_signal, task::Task};

use crate::cli::ControllerArgs;

pub async fn run(args: ControllerArgs) -> anyhow::Result<()> {
    let mut config = args.client.config().await?;
    providers_runtime::client::identify(&mut config, providers_runtime::client::INSTALLER_AGENT);
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
    let metrics = Arc::new(Metrics::new());
    // Every request of the hub client counted by verb.
    let hub = kube::client::ClientBuilder::try_from(config)
        .context("cannot build the hub client")?
        .with_layer(&CountRequests {
            counter: metrics.api_requests.clone(),
        })
        .build();
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    let settings = Settings {
        helm_image: args.helm_image.clone(),
        helm_wait: args.helm_wait.clone(),
        job_deadline_seconds: args.job_deadline,
        preparation_ttl_seconds: args.preparation_ttl,
        attempt_history: args.attempt_history,
        rollback_history: args.rollback_history,
        drift_interval_seconds: args.drift_interval,
        content_check_interval_seconds: args.drift_content_interval,
    };
    let context = Arc::new(Context::new(
        hub.clone(),
        installer_config(&args, &identity),
        settings,
        metrics.clone(),
        credential::HubEndpoint {
            server: hub_server,
            ca_pem: hub_ca_pem,
            ttl_seconds: args.runtime_credential_ttl,
        },
    ));
    let readiness = Arc::new(ControllerReadiness::new(
        context.edges.clone(),
        context.shards.clone(),
    ));
    admin::spawn(args.metrics_listen, metrics.clone(), readiness.clone()).await?;
    run_replica(hub, context, readiness, metrics, identity).await
}

/// Every replica works, from the start, the edges whose Leases it takes (ADR 40; one
/// replica alone takes every edge); on the way out it gives them back so the others take
/// them at once.
async fn run_replica(
    hub: Client,
    context: Arc<Context>,
    readiness: Arc<ControllerReadiness>,
    metrics: Arc<Metrics>,
    identity: String,
) -> anyhow::Result<()> {
    tracing::info!(%identity, "installer controller started; sharing the edges with the other replicas");
    let sharing = Task::spawn(shards::run(
        hub.clone(),
        context.shards.clone(),
        metrics.clone(),
    ));
    readiness.set_running(true);
    let run = tokio::spawn(replica::run(context.clone(), readiness.clone()));
    let abort = run.abort_handle();
    let shutdown = shutdown_signal();
    let outcome = tokio::select! {
        ended = run => {
            match ended {
                Ok(Ok(())) => tracing::error!("the replica's run ended on its own"),
                Ok(Err(error)) => tracing::error!(error = format!("{error:#}"), "the replica's run failed"),
                Err(error) => tracing::error!(%error, "the replica's run panicked"),
            }
            Err(anyhow::anyhow!("the replica's run ended unexpectedly; exiting so the Pod restarts"))
        }
        () = shutdown => Ok(()),
    };
    abort.abort();
    readiness.set_running(false);
    // Stopped first, so that no fence renews a Lease once it is given back.
    drop(sharing);
    shards::leave(&hub, &context.shards).await;
    tracing::info!("gave back this replica's edges and membership; exiting");
    outcome
}

/// The installer's typed configuration from its command line; intervals are at least a
/// second.
fn installer_config(args: &ControllerArgs, identity: &str) -> InstallerConfig {
    let seconds = |value: u64| Duration::from_secs(value.max(1));
    InstallerConfig {
        namespace: args.namespace.clone(),
        keys_config_map: args.keys_config_map.clone(),
        workspace_selector: args.workspace_selector.clone(),
        concurrency: args.concurrency,
        resync: seconds(args.resync),
        runner_log_history: args.runner_log_history,
        leader: LeaseConfig {
            namespace: args.namespace.clone(),
            name: args.lease_name.clone(),
            identity: identity.to_owned(),
            duration: Duration::from_secs(args.lease_duration),
            renew_deadline: Duration::from_secs(args.renew_deadline),
            retry_period: Duration::from_secs(args.retry_period),
        },
        probe: ProbeSettings {
            interval: seconds(args.edge_probe_interval),
            max_backoff: seconds(args.edge_probe_max_backoff),
            credentials_namespace: args.edge_credentials_namespace.clone(),
            allow_kubeconfig_exec: args.allow_edge_kubeconfig_exec,
            watch_streams_per_connection: args.edge_watch_streams_per_connection,
        },
        orphan_sweep_interval: seconds(args.orphan_sweep_interval),
        plan_values_sweep_interval: seconds(args.plan_values_sweep_interval),
        plan_values_grace: SignedDuration::from_secs(
            i64::try_from(args.plan_values_grace).unwrap_or(i64::MAX),
        ),
    }
}

/// This replica's name in the Lease when none is given: the host name and process ID.
fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "installer".to_owned());
    format!("{host}-{}", std::process::id())
}
