//! The HTTPS server: TLS with a reloadable certificate, HTTP/1.1 and HTTP/2, timeouts against
//! slow or stuck clients, and a graceful, bounded drain on shutdown.
//!
//! The admission routes are a plain axum router; this module only serves them. The probes
//! and metrics have a plain-HTTP port of their own (`providers_runtime::admin`).

pub mod callers;
mod connection;
mod handshakes;
pub mod tls;

#[cfg(test)]
mod testing;

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context as _;
use axum::Router;
use http::StatusCode;
use hyper_util::{
    rt::{TokioExecutor, TokioTimer},
    server::conn::auto,
};
use rustls::crypto::CryptoProvider;
use tokio::{
    net::TcpListener,
    sync::{Semaphore, watch},
    task::JoinSet,
};
use tokio_rustls::TlsAcceptor;
use tower_http::timeout::TimeoutLayer;

pub use tls::TlsFiles;

/// Limits and intervals of the server. The defaults suit an admission webhook behind the
/// Kubernetes API server.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// A client must finish the TLS handshake within this time.
    pub handshake_timeout: Duration,
    /// An HTTP/1.1 client must send a request's complete headers within this time (against
    /// slowloris). It also closes HTTP/1.1 keep-alive connections idle for longer.
    pub header_read_timeout: Duration,
    /// A request, body included, must be answered within this time, or it gets a 503.
    pub request_timeout: Duration,
    /// A connection with no request in flight for this long is closed gracefully. HTTP/2 has
    /// no header read timeout; this keeps a client from holding a connection without asking
    /// anything.
    pub idle_timeout: Duration,
    /// On shutdown, in-flight requests get this long to finish before connections are closed.
    pub drain_timeout: Duration,
    /// How often the certificate files are re-read in case a file event was missed.
    pub reload_poll_interval: Duration,
    /// Who may call: without it, any TLS client is answered.
    pub client_auth: Option<callers::ClientAuth>,
    /// Connections open at once; more are closed as they are accepted. Each costs a TLS
    /// session's buffers: the bound keeps anyone who can reach the port from growing the
    /// process without limit. The API server keeps a few connections, not hundreds.
    pub max_connections: usize,
    /// TLS handshakes in progress at once; a connection beyond them is closed. A caller
    /// without a certificate never gets past the handshake, so this is what unauthenticated
    /// callers can hold: three quarters of it, the rest being kept for peers that completed
    /// a handshake lately.
    pub max_handshakes: usize,
    /// TLS handshakes in progress at once from one peer address, so that one stranger
    /// cannot take every handshake slot from the API server.
    pub max_handshakes_per_peer: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            handshake_timeout: Duration::from_secs(5),
            header_read_timeout: Duration::from_secs(5),
            // Longer than the API server waits for a webhook with the usual timeoutSeconds
            // (10 s), so its own deadline decides, while a stuck request is still bounded.
            request_timeout: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(60),
            // Every request admitted before shutdown can finish (> request_timeout), and the
            // drain ends within a Pod's default 30 s termination grace period.
            drain_timeout: Duration::from_secs(20),
            reload_poll_interval: Duration::from_secs(10),
            client_auth: None,
            max_connections: 64,
            // A pending handshake holds a few tens of KiB of TLS buffers. Half the
            // connections at most, so strangers stalled in handshakes can never take
            // every connection slot from the API server.
            max_handshakes: 32,
            max_handshakes_per_peer: 8,
        }
    }
}

/// The read buffer of an HTTP/1.1 connection (request heads are far smaller).
const HTTP1_MAX_BUFFER: usize = 64 * 1024;
/// Requests in flight on one HTTP/2 connection.
const HTTP2_MAX_STREAMS: u32 = 16;
/// Bytes of a request body the peer may send ahead on one stream.
const HTTP2_STREAM_WINDOW: u32 = 64 * 1024;
/// Bytes of request bodies the peer may send ahead on one connection: twice what all its
/// streams' windows together hold, so waiting streams never use it up.
const HTTP2_CONNECTION_WINDOW: u32 = 2 * HTTP2_MAX_STREAMS * HTTP2_STREAM_WINDOW;
/// The largest request head on HTTP/2.
const HTTP2_MAX_HEADER_LIST: u32 = 16 * 1024;
/// Interval between HTTP/2 pings, to find connections whose peer has gone away.
const HTTP2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(20);
/// How long an HTTP/2 ping may go unanswered before the connection is closed.
const HTTP2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after a failed accept (e.g. out of file descriptors), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `app` over HTTPS on `listen` until `shutdown` completes, then drains in-flight
/// requests.
pub async fn serve(
    app: Router,
    tls: TlsFiles,
    listen: SocketAddr,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    serve_on(app, tls, listener, options, shutdown).await
}

/// Serves `app` over HTTPS on an already bound listener (tests bind port 0 and read the port
/// from the listener) until `shutdown` completes, then drains in-flight requests.
///
/// Fails at once if the certificate cannot be loaded; later certificate changes are picked up
/// without a restart, and a bad later pair is logged and ignored.
pub async fn serve_on(
    app: Router,
    tls: TlsFiles,
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let provider = crypto_provider();
    let callers = match &options.client_auth {
        Some(auth) => Some(Arc::new(
            callers::Callers::load(auth, provider.clone())
                .context("cannot load the webhook callers' CA")?,
        )),
        None => None,
    };
    let reloader = tls::CertReloader::load(tls, provider.clone())
        .await
        .context("cannot load the serving certificate")?
        .with_callers(callers.clone());
    let config = tls::server_config(reloader.serving_cert(), callers, provider)
        .context("cannot configure TLS")?;
    // Reloading stops when serving does.
    let _reload = reloader.spawn(options.reload_poll_interval);

    let app = app.layer(TimeoutLayer::with_status_code(
        StatusCode::SERVICE_UNAVAILABLE,
        options.request_timeout,
    ));
    let context = Arc::new(connection::Context {
        acceptor: TlsAcceptor::from(Arc::new(config)),
        app,
        http1: http1_builder(&options),
        http2: http2_builder(),
        handshake_timeout: options.handshake_timeout,
        idle_timeout: options.idle_timeout,
        // A quarter of the slots are kept for peers that completed a handshake lately (the
        // API server), so strangers holding the rest cannot shut it out (`handshakes`).
        handshakes: handshakes::HandshakeSlots::new(
            options.max_handshakes,
            options.max_handshakes_per_peer,
            options.max_handshakes / 4,
        ),
    });
    let open = Arc::new(Semaphore::new(options.max_connections.max(1)));

    let local = listener
        .local_addr()
        .context("the listener has no address")?;
    tracing::info!(address = %local, "serving HTTPS");

    // Connections watch this channel; dropping the sender tells them to finish.
    let (stop, stopped) = watch::channel(());
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some(finished) = connections.join_next(), if !connections.is_empty() => {
                report_panic(finished);
            }
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => match open.clone().try_acquire_owned() {
                    Ok(permit) => {
                        connections.spawn(connection::serve(tcp, peer, context.clone(), stopped.clone(), permit));
                    }
                    // Full: close at once rather than queue what the client sends.
                    Err(_) => tracing::debug!(%peer, "too many connections: closed"),
                },
                Err(error) => {
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }

    // Refuse new connections from here on.
    drop(listener);
    drop(stop);
    tracing::info!(
        connections = connections.len(),
        "shutting down; draining in-flight requests",
    );
    let drain = async {
        while let Some(finished) = connections.join_next().await {
            report_panic(finished);
        }
    };
    if tokio::time::timeout(options.drain_timeout, drain)
        .await
        .is_err()
    {
        tracing::warn!(
            connections = connections.len(),
            timeout = ?options.drain_timeout,
            "drain timed out; closing the remaining connections",
        );
        connections.shutdown().await;
    }
    tracing::info!("HTTPS server stopped");
    Ok(())
}

/// The process-wide provider `main` installs, or ring when none is installed (tests).
fn crypto_provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

fn http1_builder(options: &ServeOptions) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(options.header_read_timeout)
        .max_buf_size(HTTP1_MAX_BUFFER);
    builder
}

fn http2_builder() -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new()).http2_only();
    builder
        .http2()
        .timer(TokioTimer::new())
        // A stream's body waits unread while the review budget is spent. Small stream
        // windows and a connection window larger than all of them together keep those
        // waiting streams from taking the whole connection window, so the next review on
        // the same connection still gets its body through (and what one connection can
        // hold buffered stays bounded).
        .max_concurrent_streams(HTTP2_MAX_STREAMS)
        .initial_stream_window_size(HTTP2_STREAM_WINDOW)
        .initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
        .max_header_list_size(HTTP2_MAX_HEADER_LIST)
        .keep_alive_interval(HTTP2_KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(HTTP2_KEEP_ALIVE_TIMEOUT);
    builder
}

fn report_panic(finished: Result<(), tokio::task::JoinError>) {
    if let Err(error) = finished
        && error.is_panic()
    {
        tracing::error!(%error, "a connection task panicked");
    }
}

#[cfg(test)]
mod tests;
