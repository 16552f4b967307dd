//! One client connection: TLS handshake under a deadline, then HTTP/2 or HTTP/1.1 as agreed by
//! ALPN, until the client leaves, the connection idles too long, or the server shuts down.

use std::{
    convert::Infallible,
    net::SocketAddr,
    pin::Pin,
    sync::{Arc, Mutex},
    task::Poll,
    time::Duration,
};

use axum::{Router, body::Body};
use hyper::{
    Request,
    body::{Body as HttpBody, Bytes, Frame, Incoming, SizeHint},
    service::service_fn,
};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use tokio::{
    net::TcpStream,
    sync::{Notify, OwnedSemaphorePermit, watch},
    time::Instant,
};
use tokio_rustls::TlsAcceptor;
use tower::Service as _;

use super::handshakes::HandshakeSlots;
use providers_runtime::locks::Locked;

/// How long a connection with nothing in flight may take to close gracefully (flush a GOAWAY,
/// let the peer hang up) before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What every connection shares.
pub(super) struct Context {
    pub acceptor: TlsAcceptor,
    pub app: Router,
    /// HTTP/1.1 only, with the header read timeout.
    pub http1: auto::Builder<TokioExecutor>,
    /// HTTP/2 only.
    pub http2: auto::Builder<TokioExecutor>,
    pub handshake_timeout: Duration,
    pub idle_timeout: Duration,
    /// Slots for TLS handshakes in progress.
    pub handshakes: Arc<HandshakeSlots>,
}

/// Serves one connection. `stop` changes (or closes) when the server shuts down: a pending
/// handshake is abandoned, and HTTP finishes the requests in flight, then closes.
pub(super) async fn serve(
    tcp: TcpStream,
    peer: SocketAddr,
    context: Arc<Context>,
    mut stop: watch::Receiver<()>,
    // Held for as long as the connection is open.
    _open: OwnedSemaphorePermit,
) {
    // Admission reviews are small request/response exchanges; do not delay them.
    if let Err(error) = tcp.set_nodelay(true) {
        tracing::debug!(%peer, %error, "cannot set TCP_NODELAY");
    }
    let Some(handshaking) = context.handshakes.try_acquire(peer.ip()) else {
        tracing::debug!(%peer, "too many TLS handshakes in progress: closed");
        return;
    };
    let handshake = tokio::time::timeout(context.handshake_timeout, context.acceptor.accept(tcp));
    let tls = tokio::select! {
        result = handshake => match result {
            Ok(Ok(tls)) => tls,
            Ok(Err(error)) => {
                tracing::debug!(%peer, %error, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake timed out");
                return;
            }
        },
        _ = stop.changed() => return,
    };
    handshaking.completed();

    // The protocol comes from ALPN rather than from sniffing the first bytes, because sniffing
    // waits for the client without any deadline. Without ALPN, HTTP/1.1 (as Go servers do).
    let builder = if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
        &context.http2
    } else {
        &context.http1
    };
    let activity = Arc::new(Activity::new());
    let service = {
        let activity = activity.clone();
        let app = context.app.clone();
        service_fn(move |request: Request<Incoming>| {
            let in_flight = activity.begin();
            // A Router is always ready (its poll_ready returns Ready), so it can be called
            // directly.
            let response = app.clone().call(request);
            async move {
                // The request stays in flight until its response body has been sent.
                let response = response.await?;
                Ok::<_, Infallible>(response.map(|body| {
                    Body::new(TrackedBody {
                        body,
                        _in_flight: in_flight,
                    })
                }))
            }
        })
    };
    let connection = builder.serve_connection(TokioIo::new(tls), service);
    let mut connection = std::pin::pin!(connection);
    // Set once a graceful close has begun (shutdown or idleness).
    let mut close_by: Option<Instant> = None;
    let result = loop {
        let idle_since = activity.idle_since();
        let idle_deadline = idle_since.map(|since| since + context.idle_timeout);
        // A closing connection with nothing in flight is dropped after a grace period: hyper
        // defers a graceful close until the HTTP/2 handshake is done, which a silent peer never
        // finishes. The grace also runs from the end of the last response, so its final bytes
        // are flushed. A request in flight is never cut here; the drain timeout bounds those.
        let drop_at = close_by
            .zip(idle_since)
            .map(|(closing, idle)| closing.max(idle + CLOSE_GRACE));
        tokio::select! {
            result = connection.as_mut() => break result,
            () = sleep_until(drop_at) => {
                tracing::debug!(%peer, "dropping a connection that did not close in time");
                break Ok(());
            }
            _ = stop.changed(), if close_by.is_none() => {
                connection.as_mut().graceful_shutdown();
                close_by = Some(Instant::now() + CLOSE_GRACE);
            }
            // Re-evaluates the deadlines when a request starts or the last one ends.
            () = activity.changed.notified() => {}
            () = sleep_until(idle_deadline), if close_by.is_none() => {
                let idle_long_enough = activity
                    .idle_since()
                    .is_some_and(|since| since + context.idle_timeout <= Instant::now());
                if idle_long_enough {
                    tracing::debug!(%peer, "closing an idle connection");
                    connection.as_mut().graceful_shutdown();
                    close_by = Some(Instant::now() + CLOSE_GRACE);
                }
            }
        }
    };
    if let Err(error) = result {
        // Clients that go away, send garbage or time out end here; nothing the server can fix.
        tracing::debug!(%peer, %error, "connection ended with an error");
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Requests in flight on one connection, and since when it has had none: HTTP/2 has no header
/// read timeout, so without this a client could hold a connection open forever without asking
/// anything.
struct Activity {
    state: Mutex<ActivityState>,
    changed: Notify,
}

struct ActivityState {
    in_flight: usize,
    idle_since: Instant,
}

impl Activity {
    fn new() -> Self {
        Self {
            state: Mutex::new(ActivityState {
                in_flight: 0,
                idle_since: Instant::now(),
            }),
            changed: Notify::new(),
        }
    }

    fn begin(self: &Arc<Self>) -> InFlight {
        self.update(|state| state.in_flight += 1);
        InFlight(self.clone())
    }

    /// `None` while a request is in flight.
    fn idle_since(&self) -> Option<Instant> {
        let state = self.state.locked();
        (state.in_flight == 0).then_some(state.idle_since)
    }

    fn update(&self, change: impl FnOnce(&mut ActivityState)) {
        change(&mut self.state.locked());
        self.changed.notify_one();
    }
}

/// A response body that keeps its request in flight until hyper has sent it, or dropped it.
struct TrackedBody {
    body: Body,
    _in_flight: InFlight,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Marks one request in flight until dropped (when its response body is done, or the request
/// is abandoned).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.update(|state| {
            state.in_flight = state.in_flight.saturating_sub(1);
            if state.in_flight == 0 {
                state.idle_since = Instant::now();
            }
        });
    }
}
