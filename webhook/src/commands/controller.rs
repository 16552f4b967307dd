//! `providers-webhook controller`: the installer's process. It waits for the lease, runs a
//! leader's term while it holds it, and releases it when stopped.

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use kube::Client;
use providers_shared::installer::Settings;

use crate::{
    cli::ControllerArgs,
    controller::{
        Context, Elector, LeaseConfig, credential,
        metrics::{Metrics, api_requests::CountRequests},
        shards,
        task::Task,
        workspace_controller,
    },
    runtime::{admin, shutdown_signal},
};

pub async fn run(args: ControllerArgs) -> anyhow::Result<()> {
    let mut config = args.client.config().await?;
    crate::runtime::identify(&mut config, crate::runtime::INSTALLER_AGENT);
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
    };
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
    admin::spawn(
        args.metrics_listen,
        metrics.clone(),
        context.readiness.clone(),
    )
    .await?;
    if context.shards.is_sharded() {
        return run_sharded(hub, context, metrics, identity).await;
    }
    let lease = LeaseConfig {
        namespace: args.namespace.clone(),
        name: args.lease_name.clone(),
        identity: identity.clone(),
        duration: Duration::from_secs(args.lease_duration),
        renew_deadline: Duration::from_secs(args.renew_deadline),
        retry_period: Duration::from_secs(args.retry_period),
    };
    let mut elector = Elector::new(hub.clone(), lease.clone());
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    tracing::info!(%identity, lease = %args.lease_name, "installer controller started; waiting to lead");
    loop {
        tokio::select! {
            () = elector.acquire() => {}
            () = &mut shutdown => return Ok(()),
        }
        // Replicas with --shard-edges (a rolling update between the modes) give their
        // edges back when they see this leader; it works none before they have.
        let lost = tokio::select! {
            () = elector.hold() => true,
            () = shards::until_no_sharded_replica(hub.clone(), lease.clone()) => false,
            () = &mut shutdown => {
                elector.release().await;
                return Ok(());
            }
        };
        if lost {
            tracing::warn!(%identity, "lost the lease before leading");
            continue;
        }
        tracing::info!(%identity, "leading: starting the term");
        metrics.leader.set(1);
        context.readiness.set_leading(true);
        let term = tokio::spawn(workspace_controller::run(context.clone()));
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
            () = &mut shutdown => true,
        };
        abort.abort();
        metrics.leader.set(0);
        context.readiness.set_leading(false);
        if stop {
            elector.release().await;
            tracing::info!("released the lease; exiting");
            return Ok(());
        }
    }
}

/// With `--shard-edges` (ADR 40): every replica works, from the start, the edges whose
/// Leases it takes; on the way out it gives them back so the others take them at once.
async fn run_sharded(
    hub: Client,
    context: Arc<Context>,
    metrics: Arc<Metrics>,
    identity: String,
) -> anyhow::Result<()> {
    tracing::info!(%identity, "installer controller started; sharing the edges with the other replicas");
    let sharing = Task::spawn(shards::run(
        hub.clone(),
        context.shards.clone(),
        metrics.clone(),
    ));
    context.readiness.set_leading(true);
    let term = tokio::spawn(workspace_controller::run(context.clone()));
    let abort = term.abort_handle();
    let shutdown = shutdown_signal();
    let outcome = tokio::select! {
        ended = term => {
            match ended {
                Ok(Ok(())) => tracing::error!("the term ended on its own"),
                Ok(Err(error)) => tracing::error!(error = format!("{error:#}"), "the term failed"),
                Err(error) => tracing::error!(%error, "the term panicked"),
            }
            Err(anyhow::anyhow!("the term ended unexpectedly; exiting so the Pod restarts"))
        }
        () = shutdown => Ok(()),
    };
    abort.abort();
    context.readiness.set_leading(false);
    // Stopped first, so that no fence renews a Lease once it is given back.
    drop(sharing);
    shards::leave(&hub, &context.shards).await;
    tracing::info!("gave back this replica's edges and membership; exiting");
    outcome
}

/// This replica's name in the Lease when none is given: the host name and process ID.
fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "installer".to_owned());
    format!("{host}-{}", std::process::id())
}
