//! Stopping: a Pod is stopped with SIGTERM, a developer stops with Ctrl-C.

use tokio::signal::unix::{SignalKind, signal};

/// Completes on SIGTERM (a Pod being stopped) or SIGINT (Ctrl-C). Without signal handlers
/// it never completes, and says so: the process then stops only with SIGKILL.
pub async fn shutdown_signal() {
    let (Ok(mut terminate), Ok(mut interrupt)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM: stopping"),
        _ = interrupt.recv() => tracing::info!("SIGINT: stopping"),
    }
}
