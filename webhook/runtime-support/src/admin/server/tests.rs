//! The admin port's connection limits.

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

/// A connection from `address` that sends part of a request head and then nothing.
async fn stalled(to: std::net::SocketAddr, address: &str) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(format!("{address}:0").parse().unwrap())
        .unwrap();
    let mut tcp = socket.connect(to).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    tcp
}

#[tokio::test]
async fn stalled_connections_from_the_probes_address_give_way_to_a_probe() {
    let addr = start().await;
    let mut held = Vec::new();
    for _ in 0..MAX_CONNECTIONS_PER_PEER {
        held.push(stalled(addr, "127.0.0.1").await);
    }
    // The address is at its limit: the probe closes the oldest stalled one and is answered.
    assert!(get_healthz(addr).await.ends_with("ok"));
    // Again and again, while the stranger keeps holding (and reopening) connections.
    for _ in 0..3 {
        held.push(stalled(addr, "127.0.0.1").await);
        assert!(get_healthz(addr).await.ends_with("ok"));
    }
    drop(held);
}

#[tokio::test]
async fn strangers_holding_every_slot_cannot_keep_a_probe_out() {
    let addr = start().await;
    let mut held = Vec::new();
    for address in ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"] {
        for _ in 0..MAX_CONNECTIONS_PER_PEER {
            held.push(stalled(addr, address).await);
        }
    }
    assert_eq!(held.len(), MAX_CONNECTIONS);
    let started = Instant::now();
    assert!(get_healthz(addr).await.ends_with("ok"));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "answered without waiting for a stalled head to time out"
    );
    // The one closed for the probe is the oldest.
    let mut oldest = held.remove(0);
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(2), oldest.read_to_end(&mut rest)).await;
    assert!(
        matches!(read, Ok(Ok(0))),
        "the oldest stalled connection was closed"
    );
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
