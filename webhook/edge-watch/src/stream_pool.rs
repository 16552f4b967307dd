//! The connections one edge's watches share: HTTP/2, each carrying up to a set number of
//! watches as streams.
//!
//! The installer holds a watch per release namespace (its Secrets) and per namespace and
//! kind (the objects releases made), because the edge identity may read those only inside
//! its own namespaces. Over HTTP/1.1, which the Kubernetes client speaks by default, each
//! watch is a TCP and TLS connection of its own, about 44 KB in the installer; at 1,000
//! namespaces that is 4,000 connections. Here a watch leases a stream on a connection with
//! room, and a new connection is opened only when all are full: the API server admits 100
//! streams per connection unless told otherwise (`--http2-max-streams-per-connection`), and
//! a stream past that limit would wait unseen, so a connection carries fewer.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use hyper_util::{
    client::legacy::{Client as HyperClient, connect::HttpConnector},
    rt::{TokioExecutor, TokioTimer},
};
use kube::{Client, Config, client::ConfigExt};
use providers_runtime::locks::Locked;
use tower::{BoxError, ServiceBuilder};

/// The most watches one connection carries by default: below the API server's default of
/// 100 streams per connection, with room for the short requests a watch makes when it is
/// refused (binding the installer's grant).
pub const DEFAULT_STREAMS_PER_CONNECTION: u16 = 64;

/// How often an idle connection is pinged, and how long the answer may take: a connection
/// that died without a word (a NAT or load balancer that dropped it) is found within 40 s
/// and every watch on it starts again, instead of waiting for events that never come.
const PING_EVERY: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The watch connections of one edge.
#[derive(Clone)]
pub struct StreamPool {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    per_connection: usize,
    connections: Mutex<Vec<Connection>>,
}

struct Connection {
    client: Client,
    streams: Arc<AtomicUsize>,
}

/// A client whose connection has room for one more watch, held for as long as the watch
/// runs: dropping it frees the stream.
pub struct Leased {
    pub client: Client,
    _stream: StreamLease,
}

struct StreamLease(Arc<AtomicUsize>);

impl Drop for StreamLease {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl StreamPool {
    /// A pool for the edge `config` reaches; nothing is connected until a watch leases.
    pub fn new(config: Config, per_connection: u16) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                per_connection: usize::from(per_connection.max(1)),
                connections: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A stream for one watch: on a connection with room, or on a new one.
    pub fn lease(&self) -> Result<Leased, String> {
        let mut connections = self.inner.connections.locked();
        let room = connections
            .iter()
            .find(|c| c.streams.load(Ordering::Acquire) < self.inner.per_connection);
        let connection = match room {
            Some(connection) => connection,
            None => {
                connections.push(Connection {
                    client: http2_client(&self.inner.config)?,
                    streams: Arc::default(),
                });
                connections.last().expect("just pushed")
            }
        };
        connection.streams.fetch_add(1, Ordering::AcqRel);
        Ok(Leased {
            client: connection.client.clone(),
            _stream: StreamLease(connection.streams.clone()),
        })
    }

    /// How many connections are open (or were, and will connect again on use).
    pub fn connections(&self) -> usize {
        self.inner.connections.locked().len()
    }
}

/// A Kubernetes client over one HTTP/2 connection to the edge, with the kubeconfig's TLS
/// and credentials (client certificate in the TLS configuration, tokens by kube's own
/// authentication layer, which also reads a token file again as it rotates).
fn http2_client(config: &Config) -> Result<Client, String> {
    // The connector offers `h2` by ALPN itself (enable_http2).
    let tls = config.rustls_client_config().map_err(|e| e.to_string())?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http2()
        .wrap_connector(http);
    let connection = HyperClient::builder(TokioExecutor::new())
        .http2_only(true)
        .timer(TokioTimer::new())
        .http2_keep_alive_interval(PING_EVERY)
        .http2_keep_alive_timeout(PING_TIMEOUT)
        .http2_keep_alive_while_idle(true)
        .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer().map_err(|e| e.to_string())?)
        .layer(config.extra_headers_layer().map_err(|e| e.to_string())?)
        .map_err(BoxError::from)
        .service(connection);
    Ok(Client::new(service, config.default_namespace.clone()))
}
