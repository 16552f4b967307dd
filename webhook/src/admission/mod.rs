//! The admission webhook: decode AdmissionReviews, decide with `providers::admission`, encode.

mod budget;
mod handlers;
mod keys;
mod review;
mod shape;
mod state;

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use anyhow::Context;
use axum::{Router, extract::DefaultBodyLimit, routing::post};
use futures::StreamExt;
use kube::{
    Api, Client,
    runtime::{WatchStreamExt, reflector, watcher},
};
use providers::api::{Edge, Recipe};

use crate::{
    cli::ServeArgs,
    server::{self, TlsFiles, health::health_router, metrics::Metrics, metrics::metrics_router},
};
pub use state::AppState;

/// The largest AdmissionReview accepted: an object up to the API server's 3 MiB request
/// limit, its stored version (etcd keeps at most 1.5 MiB), and the envelope.
pub const BODY_LIMIT: usize = 6 * 1024 * 1024;

/// The admission routes. Reviews whose bodies add up to more than `budget_bytes` wait with
/// their bodies unread (see [`budget`]).
pub fn router(state: Arc<AppState>, budget_bytes: usize) -> Router {
    Router::new()
        .route("/mutate", post(handlers::mutate))
        .route("/validate", post(handlers::validate))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(
            budget::ReviewBudget::new(budget_bytes, BODY_LIMIT),
            budget::within_budget,
        ))
        .with_state(state)
}

/// `providers-webhook serve`.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let client_auth = match (&args.client_ca, args.allow_unauthenticated_callers) {
        (Some(ca_file), _) => Some(server::callers::ClientAuth {
            ca_file: ca_file.clone(),
            allowed: args.allowed_clients.clone(),
        }),
        (None, true) => {
            tracing::warn!(
                "--allow-unauthenticated-callers: any TLS client that reaches the port gets sealed plans; keep the network to the API server only"
            );
            None
        }
        (None, false) => anyhow::bail!(
            "the webhook signs plans, so it answers only the API server: pass --client-ca and --allowed-client (the API server's webhook client certificate), or --allow-unauthenticated-callers where the API server cannot present one"
        ),
    };
    let sealer = keys::load_sealer(&args.sealing_key)?;
    let keyring = keys::load_keyring(&sealer, args.public_keys_dir.as_deref())?;
    tracing::info!(key_id = sealer.key_id(), accepted = ?keyring.key_ids().collect::<Vec<_>>(), "sealing keys loaded");
    if args.allowed_chart_repositories.is_empty() {
        tracing::warn!("no --allowed-chart-repository: every new attempt will be denied");
    }
    let client = client(&args).await?;
    let metrics = Arc::new(Metrics::new());
    let ready = Arc::new(AtomicBool::new(false));

    let (recipes, recipe_writer) = reflector::store();
    let (edges, edge_writer) = reflector::store();
    let recipe_watch = reflector(
        recipe_writer,
        watcher(
            Api::<Recipe>::all(client.clone()),
            watcher::Config::default(),
        ),
    )
    .default_backoff()
    .for_each(|_| async {});
    let edge_watch = reflector(
        edge_writer,
        watcher(Api::<Edge>::all(client.clone()), watcher::Config::default()),
    )
    .default_backoff()
    .for_each(|_| async {});
    tokio::spawn(recipe_watch);
    tokio::spawn(edge_watch);
    {
        let (recipes, edges, ready) = (recipes.clone(), edges.clone(), ready.clone());
        tokio::spawn(async move {
            if recipes.wait_until_ready().await.is_ok() && edges.wait_until_ready().await.is_ok() {
                ready.store(true, Ordering::SeqCst);
                tracing::info!("recipe and edge caches are warm: ready");
            }
        });
    }

    let state = Arc::new(AppState {
        client,
        sealer,
        keyring,
        allowlist: args.allowed_chart_repositories.clone(),
        recipes,
        edges,
        metrics: metrics.clone(),
    });
    // Probes and metrics on a plain-HTTP port of their own: the kubelet and Prometheus
    // present no client certificate, and they need no signing webhook to answer them.
    let admin = tokio::net::TcpListener::bind(args.admin_listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.admin_listen))?;
    tracing::info!(address = %args.admin_listen, "serving /healthz, /readyz and /metrics over plain HTTP");
    let admin_app = health_router(ready).merge(metrics_router(metrics));
    tokio::spawn(server::admin::serve(admin, admin_app));
    let app = router(state, args.review_budget_mib.saturating_mul(1 << 20));
    let tls = TlsFiles {
        cert: args.tls_cert.clone(),
        key: args.tls_key.clone(),
    };
    let options = server::ServeOptions {
        client_auth,
        ..Default::default()
    };
    server::serve(app, tls, args.listen, options, shutdown_signal()).await
}

async fn client(args: &ServeArgs) -> anyhow::Result<Client> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::infer().await?,
    };
    Ok(Client::try_from(config)?)
}

/// Completes on SIGTERM (a Pod being stopped) or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: draining"),
        _ = int.recv() => tracing::info!("SIGINT: draining"),
    }
}

#[cfg(test)]
mod tests;
