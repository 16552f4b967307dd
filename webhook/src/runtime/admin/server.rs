//! The plain-HTTP server of the admin endpoints (probes and metrics).
//!
//! Anyone who reaches the port can connect, with no certificate, so what a connection may
//! hold is bounded as on the HTTPS port: a few connections at once (more are closed at
//! accept), HTTP/1.1 only, small request heads that must arrive within seconds, one request
//! per connection, and a deadline for the whole exchange. A probe or a scrape needs no more.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::Router;
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tower::Service as _;

/// Connections open at once.
pub const MAX_CONNECTIONS: usize = 16;
/// Connections open at once from one address: a kubelet probes liveness and readiness at
/// the same time, a scraper once; one stranger cannot take every slot from them.
pub const MAX_CONNECTIONS_PER_PEER: usize = 4;
/// The most bytes of a request head.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// A request head must be in within this time.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// A whole exchange (head, body, answer) ends within this time.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(15);
/// Pause after a failed accept (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `app` on `listener` until the process ends.
pub async fn serve(listener: TcpListener, app: Router) {
    let open = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let peers: Peers = Arc::default();
    let mut builder = auto::Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .keep_alive(false);
    let builder = Arc::new(builder);
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "admin port: cannot accept a connection");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "admin port: too many connections: closed");
            continue;
        };
        let Some(peer_slot) = PeerSlot::take(&peers, peer.ip()) else {
            tracing::debug!(%peer, "admin port: too many connections from this address: closed");
            continue;
        };
        let (builder, app) = (builder.clone(), app.clone());
        tokio::spawn(async move {
            let _open = (permit, peer_slot);
            let service = service_fn(move |request: hyper::Request<Incoming>| {
                // A Router is always ready, so it can be called directly.
                app.clone().call(request)
            });
            let connection = builder.serve_connection(TokioIo::new(tcp), service);
            match tokio::time::timeout(EXCHANGE_TIMEOUT, connection).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::debug!(%peer, %error, "admin port: connection ended"),
                Err(_) => tracing::debug!(%peer, "admin port: exchange took too long: closed"),
            }
        });
    }
}

/// Connections open per peer address.
type Peers = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// One connection's share of its address's slots, given back when dropped.
struct PeerSlot {
    peers: Peers,
    address: IpAddr,
}

impl PeerSlot {
    fn take(peers: &Peers, address: IpAddr) -> Option<Self> {
        let mut open = peers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = open.entry(address).or_default();
        if *count >= MAX_CONNECTIONS_PER_PEER {
            return None;
        }
        *count += 1;
        Some(Self {
            peers: peers.clone(),
            address,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self
            .peers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

#[cfg(test)]
mod tests;
