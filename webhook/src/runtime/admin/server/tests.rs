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
