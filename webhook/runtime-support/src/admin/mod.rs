//! The admin endpoints both subcommands serve on a plain-HTTP port of their own:
//! `GET /metrics` (OpenMetrics), `GET /healthz` (the process answers) and `GET /readyz`
//! (what readiness means for the role: [`Readiness`]). The kubelet and Prometheus present
//! no client certificate and need no signing webhook to answer them.

mod server;

use std::{net::SocketAddr, sync::Arc};

use anyhow::Context as _;
use axum::{
    Router,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

/// The OpenMetrics text format's media type.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Metrics that can be written out in the OpenMetrics text format.
pub trait Exposition: Send + Sync + 'static {
    fn encode(&self) -> Result<String, std::fmt::Error>;
}

/// A registry's metrics in the OpenMetrics text format.
pub fn openmetrics(
    registry: &prometheus_client::registry::Registry,
) -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)?;
    Ok(text)
}

/// Whether the process is ready for its role, and if not, why: said in `/readyz`'s body.
pub trait Readiness: Send + Sync + 'static {
    /// `Ok` with what the process is ready as, or `Err` with what it waits for.
    fn check(&self) -> Result<String, String>;
}

#[derive(Clone)]
struct Endpoints {
    metrics: Arc<dyn Exposition>,
    readiness: Arc<dyn Readiness>,
}

/// `/metrics`, `/healthz` and `/readyz`.
pub fn router(metrics: Arc<dyn Exposition>, readiness: Arc<dyn Readiness>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(Endpoints { metrics, readiness })
}

/// Binds `listen` (so a taken port fails the start) and serves the admin endpoints on it
/// until the process ends.
pub async fn spawn(
    listen: SocketAddr,
    metrics: Arc<dyn Exposition>,
    readiness: Arc<dyn Readiness>,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    tracing::info!(address = %listen, "serving /metrics, /healthz and /readyz over plain HTTP");
    tokio::spawn(server::serve(listener, router(metrics, readiness)));
    Ok(())
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(endpoints): State<Endpoints>) -> (StatusCode, String) {
    match endpoints.readiness.check() {
        Ok(role) => (StatusCode::OK, format!("ready: {role}\n")),
        Err(waiting) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {waiting}\n"),
        ),
    }
}

async fn metrics_text(State(endpoints): State<Endpoints>) -> Response {
    match endpoints.metrics.encode() {
        Ok(text) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)],
            text,
        )
            .into_response(),
        // Writing to a String does not fail and no label encoder here fails; kept total.
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "cannot encode the metrics\n",
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests;
