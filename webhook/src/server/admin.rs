//! The plain-HTTP admin server (probes and metrics) of the webhook and the installer.
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
mod tests {
    use super::*;
    use axum::routing::get;
    use std::time::Instant;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn start() -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route("/healthz", get(|| async { "ok" }));
        tokio::spawn(serve(listener, app));
        addr
    }

    async fn get_healthz(addr: std::net::SocketAddr) -> String {
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_string(&mut answer))
            .await
            .expect("an answer");
        answer
    }

    #[tokio::test]
    async fn one_address_cannot_take_every_slot() {
        let addr = start().await;
        // Stalled heads from 127.0.0.1, each within the head limit.
        let mut held = Vec::new();
        for _ in 0..MAX_CONNECTIONS_PER_PEER {
            let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            tcp.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
            held.push(tcp);
        }
        // One more from the same address is closed without an answer...
        assert_eq!(get_healthz(addr).await, "");
        // ...while another address is still answered.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        let mut tcp = socket.connect(addr).await.unwrap();
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(5), tcp.read_to_string(&mut answer))
            .await
            .expect("an answer")
            .unwrap();
        assert!(answer.ends_with("ok"), "{answer}");
        drop(held);
    }

    #[tokio::test]
    async fn a_probe_is_answered() {
        let addr = start().await;
        assert!(get_healthz(addr).await.ends_with("ok"));
    }

    #[tokio::test]
    async fn connections_that_hold_the_port_are_bounded_and_a_probe_gets_through_after() {
        let addr = start().await;
        // Each sends an endless request head: cut at the head limit or the head timeout.
        let mut held = Vec::new();
        for _ in 0..MAX_CONNECTIONS * 4 {
            let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let _ = tcp.write_all(b"GET /healthz HTTP/1.1\r\nX-Pad: ").await;
            let _ = tcp.write_all(&[b'a'; 32 * 1024]).await;
            held.push(tcp);
        }
        let started = Instant::now();
        // Over the head limit: every one is closed well before the head timeout.
        for mut tcp in held {
            let mut rest = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut rest))
                .await
                .expect("closed");
        }
        assert!(started.elapsed() < HEAD_TIMEOUT + Duration::from_secs(2));
        assert!(get_healthz(addr).await.ends_with("ok"));
    }
}
