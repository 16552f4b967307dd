//! The HTTPS server against real TLS clients: handshakes, protocols, limits, drain.

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

/// Strangers idling in handshakes from several addresses hold every slot open to them,
/// and a caller that completed a handshake before (the API server) still gets one of the
/// slots kept for it.
#[tokio::test]
async fn strangers_in_handshakes_cannot_shut_out_a_caller_that_completed_one() {
    let options = ServeOptions {
        handshake_timeout: Duration::from_secs(3),
        max_handshakes: 8,
        max_handshakes_per_peer: 2,
        ..quick()
    };
    let server = TestServer::start(options).await;
    let mut known = server.http1().await;
    assert_eq!(known.get("/hello").await.await.unwrap(), ok("hello"));
    // Four strangers, two idle connections each: the first six get slots.
    let mut stalled = Vec::new();
    for peer in 2..=5 {
        for _ in 0..2 {
            stalled.push(connect_from([127, 0, 0, peer], server.addr).await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut another = connect_from([127, 0, 0, 6], server.addr).await;
    let took = closed_within(&mut another, Duration::from_secs(5)).await;
    assert!(took < Duration::from_millis(500), "closed after {took:?}");
    // The known caller's new connection still gets its handshake.
    let mut again = server.http1().await;
    assert_eq!(again.get("/hello").await.await.unwrap(), ok("hello"));
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
