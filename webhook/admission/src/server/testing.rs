//! Test support: a throwaway CA issuing serving certificates, a server on 127.0.0.1:0, and HTTPS
//! clients that report which certificate the server presented.

use std::{
    future::Future,
    net::SocketAddr,
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use axum::{Router, body::Body, extract::Path as UrlPath, routing::get};
use http::{Request, StatusCode, header};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::{
    ClientConfig, RootCertStore,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, ServerName},
};
use tokio::{net::TcpStream, sync::oneshot, task::JoinHandle};
use tokio_rustls::{TlsConnector, client::TlsStream};

use super::{ServeOptions, TlsFiles};

pub fn ring() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A CA that signs serving certificates for `localhost` and `127.0.0.1`.
pub struct TestPki {
    ca: CertifiedIssuer<'static, KeyPair>,
}

/// A serving certificate and its key.
pub struct Leaf {
    pub cert_pem: String,
    pub key_pem: String,
    pub cert_der: Vec<u8>,
}

impl TestPki {
    pub fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params
            .distinguished_name
            .push(DnType::CommonName, "providers test CA");
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Self { ca }
    }

    /// A new certificate with a new key on every call.
    pub fn leaf(&self) -> Leaf {
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &*self.ca).unwrap();
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_der: cert.der().to_vec(),
        }
    }

    /// A client configuration trusting only this CA, offering `alpn`.
    pub fn client_config(&self, alpn: &[&[u8]]) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from(self.ca.der().to_vec()))
            .unwrap();
        let mut config = ClientConfig::builder_with_provider(ring())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

pub fn write_pair(files: &TlsFiles, leaf: &Leaf) {
    std::fs::write(&files.cert, &leaf.cert_pem).unwrap();
    std::fs::write(&files.key, &leaf.key_pem).unwrap();
}

/// Routes for the tests: `/hello` answers at once, `/slow/{ms}` after sleeping.
pub fn test_router() -> Router {
    Router::new()
        .route("/hello", get(|| async { "hello" }))
        .route(
            "/slow/{ms}",
            get(|UrlPath(ms): UrlPath<u64>| async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                "slept"
            }),
        )
}

/// A server on 127.0.0.1:0 with a certificate from its own CA, files in a temporary directory.
pub struct TestServer {
    pub addr: SocketAddr,
    pub pki: TestPki,
    pub files: TlsFiles,
    pub first: Leaf,
    stop: Option<oneshot::Sender<()>>,
    pub task: JoinHandle<anyhow::Result<()>>,
    dir: tempfile::TempDir,
}

impl TestServer {
    /// A server with its files in a fresh temporary directory.
    pub async fn start(options: ServeOptions) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let files = TlsFiles {
            cert: dir.path().join("tls.crt"),
            key: dir.path().join("tls.key"),
        };
        let pki = TestPki::new();
        let first = pki.leaf();
        write_pair(&files, &first);
        Self::start_with(dir, files, pki, first, options).await
    }

    /// A server whose `files` (inside `dir`) already hold `first`, issued by `pki`.
    pub async fn start_with(
        dir: tempfile::TempDir,
        files: TlsFiles,
        pki: TestPki,
        first: Leaf,
        options: ServeOptions,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(super::serve_on(
            test_router(),
            files.clone(),
            listener,
            options,
            async move {
                let _ = stopped.await;
            },
        ));
        let server = Self {
            addr,
            pki,
            files,
            first,
            stop: Some(stop),
            task,
            dir,
        };
        // Serving has begun (the first pair is loaded) once a handshake succeeds; tests that
        // rewrite the files right away would otherwise race the initial load.
        assert_eq!(server.presented_leaf().await, server.first.cert_der);
        server
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The CA of the serving certificate, PEM.
    pub fn pki_ca_pem(&self) -> String {
        self.pki.ca.pem()
    }

    pub fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    pub async fn connect(&self, alpn: &[&[u8]]) -> TlsStream<TcpStream> {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        TlsConnector::from(self.pki.client_config(alpn))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap()
    }

    /// A TLS connection, or why there is none (the server may close it during the handshake).
    pub async fn try_connect(&self, alpn: &[&[u8]]) -> std::io::Result<TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(self.addr).await?;
        TlsConnector::from(self.pki.client_config(alpn))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
    }

    pub async fn http1(&self) -> Http1 {
        let tls = self.connect(&[b"http/1.1"]).await;
        let leaf = presented_leaf(&tls);
        let (send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(connection);
        Http1 { send, leaf }
    }

    pub async fn http2(&self) -> Http2 {
        let tls = self.connect(&[b"h2"]).await;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (send, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                .await
                .unwrap();
        let (ended, closed) = oneshot::channel();
        tokio::spawn(async move {
            let _ = ended.send(connection.await.is_ok());
        });
        Http2 { send, closed }
    }

    /// The leaf certificate a new connection is served.
    pub async fn presented_leaf(&self) -> Vec<u8> {
        presented_leaf(&self.connect(&[b"http/1.1"]).await)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn presented_leaf(tls: &TlsStream<TcpStream>) -> Vec<u8> {
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

/// An HTTP/1.1 client connection.
pub struct Http1 {
    send: hyper::client::conn::http1::SendRequest<Body>,
    /// The certificate the server presented on this connection.
    pub leaf: Vec<u8>,
}

impl Http1 {
    /// Sends `GET path`; the returned future runs independently of this connection handle.
    pub async fn get(
        &mut self,
        path: &str,
    ) -> impl Future<Output = anyhow::Result<(StatusCode, String)>> + use<> {
        let ready = self.send.ready().await;
        let request = Request::get(path)
            .header(header::HOST, "localhost")
            .body(Body::empty())
            .unwrap();
        let response = ready.map(|()| self.send.send_request(request));
        async move { read(response?.await?).await }
    }
}

/// An HTTP/2 client connection.
pub struct Http2 {
    send: hyper::client::conn::http2::SendRequest<Body>,
    closed: oneshot::Receiver<bool>,
}

impl Http2 {
    /// Waits until the connection ends; true if it ended cleanly.
    pub async fn closed(&mut self) -> bool {
        (&mut self.closed).await.unwrap_or(false)
    }

    pub async fn get(&mut self, path: &str) -> anyhow::Result<(StatusCode, String)> {
        self.send.ready().await?;
        let request = Request::get(format!("https://localhost{path}"))
            .body(Body::empty())
            .unwrap();
        read(self.send.send_request(request).await?).await
    }
}

async fn read(
    response: http::Response<hyper::body::Incoming>,
) -> anyhow::Result<(StatusCode, String)> {
    let status = response.status();
    let body = axum::body::to_bytes(Body::new(response.into_body()), usize::MAX).await?;
    Ok((status, String::from_utf8(body.to_vec())?))
}

/// Polls `check` until it returns true or `within` has passed; returns whether it did.
pub async fn eventually<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Lays out `dir` like a kubelet Secret volume: the files are symlinks through `..data`, which
/// points at a timestamped directory holding the real files.
pub fn secret_volume(dir: &Path, generation: &str, leaf: &Leaf) {
    let data = dir.join(generation);
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("tls.crt"), &leaf.cert_pem).unwrap();
    std::fs::write(data.join("tls.key"), &leaf.key_pem).unwrap();
    // Swap `..data` atomically, as the kubelet does: a new symlink renamed over the old one.
    let tmp = dir.join("..data_tmp");
    std::os::unix::fs::symlink(generation, &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("..data")).unwrap();
    for name in ["tls.crt", "tls.key"] {
        let link = dir.join(name);
        if !link.exists() {
            std::os::unix::fs::symlink(Path::new("..data").join(name), &link).unwrap();
        }
    }
}
