//! The HTTPS server: TLS with a reloadable certificate, HTTP/1.1 and HTTP/2, timeouts against
//! slow or stuck clients, and a graceful, bounded drain on shutdown.
//!
//! The admission, health and metrics routes are plain axum routers; this module only serves
//! them.

pub mod admin;
pub mod callers;
mod connection;
mod handshakes;
pub mod health;
pub mod metrics;
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
    /// callers can hold.
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
        handshakes: handshakes::HandshakeSlots::new(
            options.max_handshakes,
            options.max_handshakes_per_peer,
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
mod tests {
    use std::time::Instant;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;
    use crate::server::testing::{
        TestPki, TestServer, eventually, secret_volume, test_router, write_pair,
    };

    /// Short intervals so the tests run fast; each test shortens the one it exercises further.
    fn quick() -> ServeOptions {
        ServeOptions {
            handshake_timeout: Duration::from_secs(5),
            header_read_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(10),
            reload_poll_interval: Duration::from_millis(200),
            client_auth: None,
            max_connections: 64,
            max_handshakes: 16,
            max_handshakes_per_peer: 16,
        }
    }

    fn ok(body: &str) -> (StatusCode, String) {
        (StatusCode::OK, body.to_owned())
    }

    #[tokio::test]
    async fn serves_http1_and_http2_and_keeps_connections_alive() {
        let server = TestServer::start(quick()).await;

        let mut http1 = server.http1().await;
        assert_eq!(http1.leaf, server.first.cert_der);
        assert_eq!(http1.get("/hello").await.await.unwrap(), ok("hello"));
        // A second request on the same connection: keep-alive.
        assert_eq!(http1.get("/hello").await.await.unwrap(), ok("hello"));

        let mut http2 = server.http2().await;
        assert_eq!(http2.get("/hello").await.unwrap(), ok("hello"));
        assert_eq!(http2.get("/hello").await.unwrap(), ok("hello"));
    }

    #[tokio::test]
    async fn new_connections_get_a_rewritten_certificate_while_old_ones_finish() {
        let server = TestServer::start(quick()).await;
        let mut old = server.http1().await;
        assert_eq!(old.leaf, server.first.cert_der);
        let in_flight = tokio::spawn(old.get("/slow/3000").await);

        let second = server.pki.leaf();
        write_pair(&server.files, &second);
        assert!(
            eventually(Duration::from_secs(10), || async {
                server.presented_leaf().await == second.cert_der
            })
            .await,
            "new connections never got the new certificate"
        );
        assert!(
            !in_flight.is_finished(),
            "the request should still be in flight"
        );
        assert_eq!(in_flight.await.unwrap().unwrap(), ok("slept"));
        // The old connection survived the swap and still serves.
        assert_eq!(old.get("/hello").await.await.unwrap(), ok("hello"));
    }

    #[tokio::test]
    async fn a_secret_volume_update_is_seen_through_the_directory_watch() {
        let dir = tempfile::tempdir().unwrap();
        let pki = TestPki::new();
        let first = pki.leaf();
        secret_volume(dir.path(), "..2025_01_01_00_00_00.1", &first);
        let files = TlsFiles {
            cert: dir.path().join("tls.crt"),
            key: dir.path().join("tls.key"),
        };
        // Polling practically off: only the watch can notice the swap in time.
        let options = ServeOptions {
            reload_poll_interval: Duration::from_secs(3600),
            ..quick()
        };
        let server = TestServer::start_with(dir, files, pki, first, options).await;
        assert_eq!(server.presented_leaf().await, server.first.cert_der);

        let second = server.pki.leaf();
        secret_volume(server.dir(), "..2025_01_02_00_00_00.2", &second);
        assert!(
            eventually(Duration::from_secs(10), || async {
                server.presented_leaf().await == second.cert_der
            })
            .await,
            "the ..data swap was not noticed"
        );
    }

    #[tokio::test]
    async fn a_bad_pair_is_rejected_and_the_old_certificate_stays() {
        let server = TestServer::start(quick()).await;
        let other = server.pki.leaf();

        // A new certificate with the old key: a mismatched pair.
        std::fs::write(&server.files.cert, &other.cert_pem).unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Had the pair been applied, the handshake would fail or present `other`.
        assert_eq!(server.presented_leaf().await, server.first.cert_der);

        std::fs::write(&server.files.key, "garbage").unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(server.presented_leaf().await, server.first.cert_der);

        // The reloader is still alive: a good pair is applied.
        write_pair(&server.files, &other);
        assert!(
            eventually(Duration::from_secs(10), || async {
                server.presented_leaf().await == other.cert_der
            })
            .await,
            "the good pair after the bad ones was not applied"
        );
    }

    #[tokio::test]
    async fn shutdown_refuses_new_connections_and_lets_in_flight_requests_finish() {
        let mut server = TestServer::start(quick()).await;
        let mut http1 = server.http1().await;
        let mut http2 = server.http2().await;
        let slow1 = tokio::spawn(http1.get("/slow/1500").await);
        let slow2 = tokio::spawn(async move { http2.get("/slow/1500").await });
        tokio::time::sleep(Duration::from_millis(300)).await;

        server.shutdown();
        let addr = server.addr;
        assert!(
            eventually(Duration::from_secs(5), || async {
                tokio::net::TcpStream::connect(addr).await.is_err()
            })
            .await,
            "the listener still accepts after shutdown"
        );
        assert!(!slow1.is_finished() && !slow2.is_finished());

        assert_eq!(slow1.await.unwrap().unwrap(), ok("slept"));
        assert_eq!(slow2.await.unwrap().unwrap(), ok("slept"));
        let served = tokio::time::timeout(Duration::from_secs(5), &mut server.task)
            .await
            .expect("serve should return once drained");
        served.unwrap().unwrap();
    }

    #[tokio::test]
    async fn idle_and_silent_connections_do_not_hold_up_shutdown() {
        // The drain timeout (10 s) is far above what this shutdown may take.
        let mut server = TestServer::start(quick()).await;
        let mut idle = server.http1().await;
        assert_eq!(idle.get("/hello").await.await.unwrap(), ok("hello"));
        let mut idle_http2 = server.http2().await;
        assert_eq!(idle_http2.get("/hello").await.unwrap(), ok("hello"));
        // TLS done, HTTP/2 agreed, but no preface: hyper cannot close this one gracefully.
        let _silent = server.connect(&[b"h2"]).await;
        // Let the server finish its side of the handshake and start waiting for the preface.
        tokio::time::sleep(Duration::from_millis(300)).await;

        let started = Instant::now();
        server.shutdown();
        let served = tokio::time::timeout(Duration::from_secs(5), &mut server.task)
            .await
            .expect("serve should return without waiting for the drain timeout");
        served.unwrap().unwrap();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(3), "shutdown took {took:?}");
        assert!(idle_http2.closed().await, "HTTP/2 should end with a GOAWAY");
    }

    #[tokio::test]
    async fn the_drain_timeout_bounds_shutdown() {
        let options = ServeOptions {
            drain_timeout: Duration::from_millis(300),
            ..quick()
        };
        let mut server = TestServer::start(options).await;
        let mut http1 = server.http1().await;
        let stuck = tokio::spawn(http1.get("/slow/60000").await);
        tokio::time::sleep(Duration::from_millis(300)).await;

        let started = Instant::now();
        server.shutdown();
        let served = tokio::time::timeout(Duration::from_secs(5), &mut server.task)
            .await
            .expect("serve should return after the drain timeout");
        served.unwrap().unwrap();
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300),
            "returned after {took:?}"
        );
        // The stuck request's connection was closed, not answered.
        let answer = tokio::time::timeout(Duration::from_secs(5), stuck)
            .await
            .unwrap()
            .unwrap();
        assert!(answer.is_err(), "{answer:?}");
    }

    #[tokio::test]
    async fn a_request_that_takes_too_long_gets_503_and_the_connection_stays() {
        let options = ServeOptions {
            request_timeout: Duration::from_millis(300),
            ..quick()
        };
        let server = TestServer::start(options).await;
        let mut http1 = server.http1().await;
        let (status, _) = http1.get("/slow/10000").await.await.unwrap();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(http1.get("/hello").await.await.unwrap(), ok("hello"));
    }

    #[tokio::test]
    async fn a_client_that_sends_headers_too_slowly_is_cut_off() {
        let options = ServeOptions {
            header_read_timeout: Duration::from_millis(500),
            ..quick()
        };
        let server = TestServer::start(options).await;
        let tls = server.connect(&[b"http/1.1"]).await;
        let (mut read, write) = tokio::io::split(tls);
        let started = Instant::now();
        let dribble = tokio::spawn(slowloris(write));
        let mut received = Vec::new();
        // EOF or a reset: either way the server hung up.
        let _ = tokio::time::timeout(Duration::from_secs(5), read.read_to_end(&mut received))
            .await
            .expect("the server should close a connection whose headers never end");
        let took = started.elapsed();
        dribble.abort();
        assert!(took >= Duration::from_millis(450), "closed after {took:?}");
        let received = String::from_utf8_lossy(&received);
        assert!(!received.contains("hello"), "{received}");
    }

    /// Sends a byte of headers every 100 ms, never the blank line that ends them.
    async fn slowloris(mut write: impl tokio::io::AsyncWrite + Unpin) -> std::io::Result<()> {
        write
            .write_all(b"GET /hello HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
            .await?;
        loop {
            write.write_all(b"a").await?;
            write.flush().await?;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    #[tokio::test]
    async fn a_client_that_never_finishes_the_tls_handshake_is_cut_off() {
        let options = ServeOptions {
            handshake_timeout: Duration::from_millis(500),
            ..quick()
        };
        let server = TestServer::start(options).await;
        let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let started = Instant::now();
        let mut received = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut received))
            .await
            .expect("the server should close a connection that never handshakes");
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(450), "closed after {took:?}");
        assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    }

    /// Reads until the server closes the connection; how long that took.
    async fn closed_within(tcp: &mut tokio::net::TcpStream, limit: Duration) -> Duration {
        let started = Instant::now();
        let mut received = Vec::new();
        let _ = tokio::time::timeout(limit, tcp.read_to_end(&mut received))
            .await
            .expect("the server should close the connection");
        started.elapsed()
    }

    #[tokio::test]
    async fn handshakes_beyond_the_limit_are_closed_at_once_and_the_port_recovers() {
        let options = ServeOptions {
            handshake_timeout: Duration::from_secs(1),
            max_handshakes: 2,
            ..quick()
        };
        let server = TestServer::start(options).await;
        // Two callers that never say anything hold both handshake slots...
        let mut stalled = Vec::new();
        for _ in 0..2 {
            stalled.push(tokio::net::TcpStream::connect(server.addr).await.unwrap());
        }
        // ...(the server takes them in order; give it a moment to reach them)...
        tokio::time::sleep(Duration::from_millis(100)).await;
        // ...so a third is closed at once, long before the handshake deadline.
        let mut third = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let took = closed_within(&mut third, Duration::from_secs(5)).await;
        assert!(took < Duration::from_millis(500), "closed after {took:?}");
        // The stalled ones are cut at the deadline, and the slots are free again.
        for mut tcp in stalled {
            closed_within(&mut tcp, Duration::from_secs(5)).await;
        }
        let mut http1 = server.http1().await;
        assert_eq!(http1.get("/hello").await.await.unwrap(), ok("hello"));
    }

    /// A connection to `server` from the loopback address `source` (any 127.x.y.z works on
    /// Linux), so the server sees another peer.
    async fn connect_from(source: [u8; 4], server: SocketAddr) -> tokio::net::TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from((source, 0))).unwrap();
        socket.connect(server).await.unwrap()
    }

    #[tokio::test]
    async fn one_peer_cannot_take_the_handshake_slots_of_another() {
        let options = ServeOptions {
            handshake_timeout: Duration::from_secs(3),
            max_handshakes: 8,
            max_handshakes_per_peer: 2,
            ..quick()
        };
        let server = TestServer::start(options).await;
        let mut stalled = Vec::new();
        for _ in 0..2 {
            stalled.push(connect_from([127, 0, 0, 2], server.addr).await);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut third = connect_from([127, 0, 0, 2], server.addr).await;
        let took = closed_within(&mut third, Duration::from_secs(5)).await;
        assert!(took < Duration::from_millis(500), "closed after {took:?}");
        // Another peer still gets its handshake while the first one's stall.
        let mut http1 = server.http1().await;
        assert_eq!(http1.get("/hello").await.await.unwrap(), ok("hello"));
        drop(stalled);
    }

    #[tokio::test]
    async fn connections_beyond_the_limit_are_closed_at_once() {
        let options = ServeOptions {
            max_connections: 2,
            ..quick()
        };
        let server = TestServer::start(options).await;
        let mut first = server.http1().await;
        let mut second = server.http2().await;
        assert_eq!(first.get("/hello").await.await.unwrap(), ok("hello"));
        assert_eq!(second.get("/hello").await.unwrap(), ok("hello"));
        let mut third = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let took = closed_within(&mut third, Duration::from_secs(5)).await;
        assert!(took < Duration::from_millis(500), "closed after {took:?}");
        // The open ones are untouched; when one leaves, its slot is free again.
        assert_eq!(first.get("/hello").await.await.unwrap(), ok("hello"));
        drop(second);
        assert!(
            eventually(Duration::from_secs(5), || async {
                tokio::time::timeout(Duration::from_secs(1), server.try_connect(&[b"http/1.1"]))
                    .await
                    .is_ok_and(|connected| connected.is_ok())
            })
            .await,
            "a new connection should be served once one has left"
        );
    }

    #[tokio::test]
    async fn an_idle_http2_connection_is_closed_but_a_busy_one_is_not() {
        let options = ServeOptions {
            idle_timeout: Duration::from_millis(500),
            ..quick()
        };
        let server = TestServer::start(options).await;

        // A request longer than the idle timeout is not cut: the connection is busy, not idle.
        let mut http2 = server.http2().await;
        assert_eq!(http2.get("/slow/1000").await.unwrap(), ok("slept"));
        let started = Instant::now();
        // Then, idle, the server says goodbye: the client's connection ends.
        let closed = tokio::time::timeout(Duration::from_secs(5), http2.closed())
            .await
            .expect("the idle connection should be closed");
        assert!(closed, "the connection should have ended cleanly (GOAWAY)");
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(400), "closed after {took:?}");
    }

    #[tokio::test]
    async fn an_http2_client_that_never_sends_its_preface_is_cut_off() {
        let options = ServeOptions {
            idle_timeout: Duration::from_millis(500),
            ..quick()
        };
        let server = TestServer::start(options).await;
        let mut tls = server.connect(&[b"h2"]).await;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let started = Instant::now();
        let mut received = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut received))
            .await
            .expect("the server should close a connection that never sends a request");
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(450), "closed after {took:?}");
    }

    #[tokio::test]
    async fn startup_fails_when_the_certificate_cannot_be_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tls = TlsFiles {
            cert: dir.path().join("missing.crt"),
            key: dir.path().join("missing.key"),
        };
        let error = serve_on(test_router(), tls, listener, quick(), async {})
            .await
            .unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains("missing.crt"), "{message}");
    }
}
