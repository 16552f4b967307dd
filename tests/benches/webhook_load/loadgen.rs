//! A closed-loop HTTPS load generator: N keep-alive connections (HTTP/1.1, or HTTP/2 with
//! several streams each), every worker sending the next request as soon as its answer is
//! in, for a fixed time and at most a fixed number of requests.

use std::{
    net::{Ipv4Addr, SocketAddr},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use anyhow::{Context, bail};
use hyper::{
    Request, StatusCode,
    body::{Body as _, Incoming},
    client::conn::{http1, http2},
};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::{
    ClientConfig, RootCertStore,
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject},
};
use tokio::{net::TcpStream, time::Instant};
use tokio_rustls::TlsConnector;

/// A request waits at most this long; longer counts as a failure.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The webhook to load: its address, the CA its serving certificate comes from, and the
/// client certificate the API server presents to it.
#[derive(Clone)]
pub struct Target {
    pub addr: SocketAddr,
    /// The plain-HTTP address of /metrics.
    pub admin: SocketAddr,
    http1: TlsConnector,
    http2: TlsConnector,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Http1,
    /// HTTP/2 with this many concurrent streams per connection.
    Http2 {
        streams: usize,
    },
}

impl Protocol {
    pub fn label(self) -> String {
        match self {
            Protocol::Http1 => "HTTP/1.1".to_owned(),
            Protocol::Http2 { streams } => format!("HTTP/2 ×{streams} streams"),
        }
    }
}

impl Target {
    pub fn new(
        port: u16,
        admin_port: u16,
        ca_pem: &str,
        client_cert: &std::path::Path,
        client_key: &std::path::Path,
    ) -> anyhow::Result<Self> {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots.add(cert.context("CA certificate")?)?;
        }
        let chain = CertificateDer::pem_file_iter(client_cert)?
            .collect::<Result<Vec<_>, _>>()
            .context("client certificate")?;
        let key = PrivateKeyDer::from_pem_file(client_key).context("client key")?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)?;
        let with_alpn = |alpn: &[u8]| {
            let mut config = config.clone();
            config.alpn_protocols = vec![alpn.to_vec()];
            TlsConnector::from(Arc::new(config))
        };
        Ok(Self {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            admin: SocketAddr::from((Ipv4Addr::LOCALHOST, admin_port)),
            http1: with_alpn(b"http/1.1"),
            http2: with_alpn(b"h2"),
        })
    }

    async fn tls(
        &self,
        alpn: &[u8],
    ) -> anyhow::Result<TokioIo<tokio_rustls::client::TlsStream<TcpStream>>> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let connector = if alpn == b"h2" {
            &self.http2
        } else {
            &self.http1
        };
        let name = ServerName::IpAddress(Ipv4Addr::LOCALHOST.into());
        let tls = connector.connect(name, tcp).await?;
        if tls.get_ref().1.alpn_protocol() != Some(alpn) {
            bail!(
                "the server did not agree to {}",
                String::from_utf8_lossy(alpn)
            );
        }
        Ok(TokioIo::new(tls))
    }

    /// One GET on a fresh plain HTTP/1.1 connection to the admin port, for /metrics.
    pub async fn get(&self, path: &str) -> anyhow::Result<String> {
        let tcp = TcpStream::connect(self.admin).await?;
        let (mut sender, connection) = http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(connection);
        let request = Request::get(path)
            .header("host", self.admin.to_string())
            .body(String::new())?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let body = read_body(response.into_body()).await?;
        if status != StatusCode::OK {
            bail!("GET {path}: {status}");
        }
        Ok(String::from_utf8(body)?)
    }

    /// One POST on a fresh HTTP/1.1 connection; the status and body.
    pub async fn post_once(&self, path: &str, body: &str) -> anyhow::Result<(StatusCode, Vec<u8>)> {
        let (mut sender, connection) = http1::handshake(self.tls(b"http/1.1").await?).await?;
        tokio::spawn(connection);
        let request = post(path, self.addr, body.to_owned(), false)?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        Ok((status, read_body(response.into_body()).await?))
    }
}

/// What to send, how, and for how long.
#[derive(Clone)]
pub struct Load {
    pub path: &'static str,
    pub body: Arc<String>,
    /// A response body must contain this to count as the expected answer.
    pub expect: &'static str,
    pub protocol: Protocol,
    pub connections: usize,
    /// Requests before this long are not counted (connections and caches warm up).
    pub warmup: Duration,
    pub duration: Duration,
    /// At most this many requests are measured.
    pub max_requests: u64,
}

/// What a run measured.
pub struct Outcome {
    pub ok: u64,
    pub failed: u64,
    /// From the end of the warm-up to the last answer.
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
    pub first_failure: Option<String>,
}

impl Outcome {
    pub fn per_second(&self) -> f64 {
        if self.elapsed.is_zero() {
            return 0.0;
        }
        self.ok as f64 / self.elapsed.as_secs_f64()
    }
}

#[derive(Default)]
struct WorkerResult {
    ok: u64,
    failed: u64,
    latencies: Vec<Duration>,
    first_failure: Option<String>,
    last_answer: Option<Instant>,
}

enum Sender {
    Http1(http1::SendRequest<String>),
    Http2(http2::SendRequest<String>),
}

/// Connects, then runs the load. `measuring` is called once the warm-up is over (to start CPU
/// accounting); the run is over when every worker has stopped.
pub async fn run(
    target: &Target,
    load: &Load,
    measuring: impl FnOnce(),
) -> anyhow::Result<Outcome> {
    let mut senders = Vec::new();
    for _ in 0..load.connections {
        senders.push(match load.protocol {
            Protocol::Http1 => {
                let (sender, connection) = http1::handshake(target.tls(b"http/1.1").await?).await?;
                tokio::spawn(connection);
                vec![Sender::Http1(sender)]
            }
            Protocol::Http2 { streams } => {
                let (sender, connection) =
                    http2::handshake(TokioExecutor::new(), target.tls(b"h2").await?).await?;
                tokio::spawn(connection);
                (0..streams)
                    .map(|_| Sender::Http2(sender.clone()))
                    .collect()
            }
        });
    }
    let start = Instant::now();
    let measure_from = start + load.warmup;
    let stop_at = measure_from + load.duration;
    let budget = Arc::new(AtomicU64::new(load.max_requests));
    let workers: Vec<_> = senders
        .into_iter()
        .flatten()
        .map(|sender| {
            let load = load.clone();
            let budget = budget.clone();
            let addr = target.addr;
            tokio::spawn(worker(sender, load, addr, measure_from, stop_at, budget))
        })
        .collect();
    tokio::time::sleep_until(measure_from).await;
    measuring();
    let mut total = WorkerResult::default();
    for worker in workers {
        let result = worker.await.context("a load worker panicked")?;
        total.ok += result.ok;
        total.failed += result.failed;
        total.latencies.extend(result.latencies);
        total.first_failure = total.first_failure.or(result.first_failure);
        total.last_answer = total.last_answer.max(result.last_answer);
    }
    let elapsed = total.last_answer.map_or(Duration::ZERO, |last| {
        last.saturating_duration_since(measure_from)
    });
    Ok(Outcome {
        ok: total.ok,
        failed: total.failed,
        elapsed,
        latencies: total.latencies,
        first_failure: total.first_failure,
    })
}

async fn worker(
    mut sender: Sender,
    load: Load,
    addr: SocketAddr,
    measure_from: Instant,
    stop_at: Instant,
    budget: Arc<AtomicU64>,
) -> WorkerResult {
    let mut result = WorkerResult::default();
    loop {
        let sent = Instant::now();
        if sent >= stop_at {
            break;
        }
        let measured = sent >= measure_from;
        if measured
            && budget
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_err()
        {
            break;
        }
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, exchange(&mut sender, &load, addr))
            .await
            .unwrap_or_else(|_| Err(anyhow::anyhow!("no answer within {REQUEST_TIMEOUT:?}")));
        let answered = Instant::now();
        if !measured {
            if let Err(error) = answer {
                result
                    .first_failure
                    .get_or_insert(format!("warm-up: {error:#}"));
                result.failed += 1;
                // A broken connection cannot be used for the measurement.
                break;
            }
            continue;
        }
        result.last_answer = Some(answered);
        match answer {
            Ok(()) => {
                result.ok += 1;
                result.latencies.push(answered - sent);
            }
            Err(error) => {
                result.failed += 1;
                result.first_failure.get_or_insert(format!("{error:#}"));
                if !sender_usable(&sender) {
                    break;
                }
            }
        }
    }
    result
}

fn sender_usable(sender: &Sender) -> bool {
    match sender {
        Sender::Http1(s) => !s.is_closed(),
        Sender::Http2(s) => !s.is_closed(),
    }
}

fn post(
    path: &str,
    addr: SocketAddr,
    body: String,
    http2: bool,
) -> anyhow::Result<Request<String>> {
    let builder = if http2 {
        Request::post(format!("https://{addr}{path}"))
    } else {
        Request::post(path).header("host", addr.to_string())
    };
    Ok(builder
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(body)?)
}

/// One request and its checked answer.
async fn exchange(sender: &mut Sender, load: &Load, addr: SocketAddr) -> anyhow::Result<()> {
    let body = load.body.as_str().to_owned();
    let response = match sender {
        Sender::Http1(s) => {
            s.ready().await?;
            s.send_request(post(load.path, addr, body, false)?).await?
        }
        Sender::Http2(s) => {
            s.ready().await?;
            s.send_request(post(load.path, addr, body, true)?).await?
        }
    };
    let status = response.status();
    let body = read_body(response.into_body()).await?;
    if status != StatusCode::OK || !contains(&body, load.expect.as_bytes()) {
        bail!(
            "{status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(400)])
        );
    }
    Ok(())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Reads a whole response body (admission responses are small; bounded at 16 MiB).
pub async fn read_body(mut body: Incoming) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        if let Ok(data) = frame?.into_data() {
            bytes.extend_from_slice(&data);
            if bytes.len() > 16 << 20 {
                bail!("response body over 16 MiB");
            }
        }
    }
    Ok(bytes)
}
