//! The plain-HTTP server of the admin endpoints (probes and metrics).
//!
//! Anyone who reaches the port can connect, with no certificate, so what a connection may
//! hold is bounded as on the HTTPS port: a few connections at once, HTTP/1.1 only, small
//! request heads that must arrive within seconds, one request per connection, and a
//! deadline for the whole exchange. A probe or a scrape needs no more.
//!
//! When every slot is taken, a new connection closes the oldest one that has not sent a
//! whole request head yet (from its own address, when that address is at its limit), so
//! strangers who hold connections open, or keep reopening them, cannot keep the kubelet's
//! probes out: a probe sends its request at once and is then no longer closable.

use std::{
    collections::{HashMap, VecDeque},
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
use tokio::{
    net::TcpListener,
    sync::{Semaphore, oneshot},
};
use tower::Service as _;

use crate::locks::Locked;

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
/// How long a new connection waits for the slot of a connection it closed.
const ROOM_WAIT: Duration = Duration::from_millis(100);

/// Serves `app` on `listener` until the process ends.
pub async fn serve(listener: TcpListener, app: Router) {
    let open = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let peers: Peers = Arc::default();
    let waiting: Waiting = Arc::default();
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
        let address = peer.ip();
        let Some(permit) =
            take_or_make_room(&waiting, None, || open.clone().try_acquire_owned().ok()).await
        else {
            tracing::debug!(%peer, "admin port: too many connections: closed");
            continue;
        };
        let Some(peer_slot) =
            take_or_make_room(&waiting, Some(address), || PeerSlot::take(&peers, address)).await
        else {
            tracing::debug!(%peer, "admin port: too many connections from this address: closed");
            continue;
        };
        let (id, closed) = waiting.locked().add(address);
        let (builder, app, waiting) = (builder.clone(), app.clone(), waiting.clone());
        tokio::spawn(async move {
            let _open = (permit, peer_slot);
            let requested = waiting.clone();
            let service = service_fn(move |request: hyper::Request<Incoming>| {
                // A whole head is in: this connection is no longer closable for a newer one.
                requested.locked().remove(id);
                // A Router is always ready, so it can be called directly.
                app.clone().call(request)
            });
            let connection = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::select! {
                ended = tokio::time::timeout(EXCHANGE_TIMEOUT, connection) => match ended {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => tracing::debug!(%peer, %error, "admin port: connection ended"),
                    Err(_) => tracing::debug!(%peer, "admin port: exchange took too long: closed"),
                },
                // Only a sent signal closes it; a sender dropped once the head was in does not.
                Ok(()) = closed => {
                    tracing::debug!(%peer, "admin port: closed for a newer connection before it sent a request");
                }
            }
            waiting.locked().remove(id);
        });
    }
}

/// `take()`, or, when it finds no room, closes the oldest connection still waiting for its
/// request head (from `address` only, when given) and tries again until its slot is free.
async fn take_or_make_room<T>(
    waiting: &Waiting,
    address: Option<IpAddr>,
    mut take: impl FnMut() -> Option<T>,
) -> Option<T> {
    if let Some(taken) = take() {
        return Some(taken);
    }
    if !waiting.locked().close_oldest(address) {
        return None;
    }
    let deadline = tokio::time::Instant::now() + ROOM_WAIT;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
        if let Some(taken) = take() {
            return Some(taken);
        }
    }
    None
}

/// The connections that have not sent a whole request head yet, oldest first, each with
/// the means to close it.
type Waiting = Arc<Mutex<WaitingConnections>>;

#[derive(Default)]
struct WaitingConnections {
    next_id: u64,
    oldest_first: VecDeque<(u64, IpAddr, oneshot::Sender<()>)>,
}

impl WaitingConnections {
    fn add(&mut self, address: IpAddr) -> (u64, oneshot::Receiver<()>) {
        let (close, closed) = oneshot::channel();
        let id = self.next_id;
        self.next_id += 1;
        self.oldest_first.push_back((id, address, close));
        (id, closed)
    }

    fn remove(&mut self, id: u64) {
        self.oldest_first.retain(|(waiting, ..)| *waiting != id);
    }

    /// Closes the oldest waiting connection (from `address`, when given); whether there
    /// was one.
    fn close_oldest(&mut self, address: Option<IpAddr>) -> bool {
        let Some(at) = self
            .oldest_first
            .iter()
            .position(|(_, from, _)| address.is_none_or(|address| *from == address))
        else {
            return false;
        };
        if let Some((_, _, close)) = self.oldest_first.remove(at) {
            let _ = close.send(());
        }
        true
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
        let mut open = peers.locked();
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
        let mut open = self.peers.locked();
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
