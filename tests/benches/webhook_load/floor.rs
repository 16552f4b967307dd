//! The floor of the through-the-API-server comparison: an HTTPS server that admits every
//! review without reading more of it than its UID. Registered under the same webhook
//! configurations as the real webhook, it shows what two webhook calls cost the API server
//! whatever the webhook decides, and so how close to that the real webhook is.

use std::{
    convert::Infallible,
    net::TcpListener as StdListener,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, body::Bytes, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use providers_tests::{controlplane::ControlPlaneInfo, pki::Authority, webhook};
use rustls::pki_types::{PrivateKeyDer, pem::PemObject};
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

/// What the floor offers in ALPN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alpn {
    /// h2 then http/1.1, as the real webhook: the API server's Go client picks HTTP/2.
    Http2,
    /// http/1.1 only.
    Http1,
}

/// A running floor server on its own thread. Dropping it stops the thread.
pub struct Floor {
    pub port: u16,
    pub ca_pem: String,
    pub alpn: Alpn,
    calls: Arc<AtomicU64>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(serde::Deserialize)]
struct Review<'a> {
    #[serde(borrow)]
    request: Uid<'a>,
}

#[derive(serde::Deserialize)]
struct Uid<'a> {
    uid: &'a str,
}

impl Floor {
    pub fn start(alpn: Alpn) -> anyhow::Result<Self> {
        let ca = Authority::generate("floor-webhook-ca")?;
        let serving = ca.issue_serving("floor-webhook", &[])?;
        let cert = rustls::pki_types::CertificateDer::pem_slice_iter(serving.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()?;
        let key = PrivateKeyDer::from_pem_slice(serving.key_pem.as_bytes())?;
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(cert, key)?;
        config.alpn_protocols = match alpn {
            Alpn::Http2 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            Alpn::Http1 => vec![b"http/1.1".to_vec()],
        };
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = StdListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let calls = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = oneshot::channel();
        let thread = {
            let calls = calls.clone();
            std::thread::Builder::new()
                .name("floor-webhook".into())
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a runtime for the floor webhook");
                    runtime.block_on(async move {
                        let listener = tokio::net::TcpListener::from_std(listener)
                            .expect("the floor's listener");
                        tokio::select! {
                            () = accept(listener, acceptor, calls) => {}
                            _ = stopped => {}
                        }
                    });
                })?
        };
        Ok(Self {
            port,
            ca_pem: ca.cert_pem,
            alpn,
            calls,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Reviews answered so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Points the shipped webhook configurations at this server.
    pub fn register(&self, plane: &ControlPlaneInfo) -> anyhow::Result<()> {
        webhook::register_configurations(plane, self.port, &self.ca_pem)
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept(listener: tokio::net::TcpListener, acceptor: TlsAcceptor, calls: Arc<AtomicU64>) {
    while let Ok((tcp, _)) = listener.accept().await {
        let _ = tcp.set_nodelay(true);
        let (acceptor, calls) = (acceptor.clone(), calls.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                let calls = calls.clone();
                async move { Ok::<_, Infallible>(answer(request, &calls).await) }
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

/// Allowed, for the review's UID; 400 for a body that is not a review.
async fn answer(
    request: Request<hyper::body::Incoming>,
    calls: &AtomicU64,
) -> Response<Full<Bytes>> {
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return status(400),
    };
    let Ok(review) = serde_json::from_slice::<Review>(&body) else {
        return status(400);
    };
    calls.fetch_add(1, Ordering::Relaxed);
    let answer = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": review.request.uid, "allowed": true},
    });
    Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(answer.to_string())))
        .unwrap_or_else(|_| status(500))
}

fn status(code: u16) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = hyper::StatusCode::from_u16(code).unwrap_or_default();
    response
}
