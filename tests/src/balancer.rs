//! A Service stand-in: one address on 127.0.0.1 that spreads new TCP connections over the
//! current endpoints, round robin, as kube-proxy does for a ClusterIP. Endpoints are set as
//! the EndpointSlice controller sets them (a replica joins once ready, leaves once it is
//! stopping); a connection already open stays with its endpoint, as it does behind a real
//! Service. A connection to an endpoint that refuses is dropped, not tried elsewhere.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use tokio::{
    io::copy_bidirectional,
    net::{TcpListener, TcpStream},
    task::JoinHandle,
};

/// The balancing address. Dropping it closes the port (open connections run on).
pub struct Balancer {
    /// The address clients connect to.
    pub addr: SocketAddr,
    endpoints: Arc<Mutex<Vec<SocketAddr>>>,
    accept: JoinHandle<()>,
    /// Connections that found no endpoint, or whose endpoint refused.
    refused: Arc<AtomicUsize>,
}

impl Balancer {
    /// Listens on a free port of 127.0.0.1 with no endpoints yet. Call it inside the Tokio
    /// runtime that should run it.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let endpoints: Arc<Mutex<Vec<SocketAddr>>> = Arc::default();
        let refused = Arc::new(AtomicUsize::new(0));
        let accept = {
            let (endpoints, refused) = (endpoints.clone(), refused.clone());
            tokio::spawn(async move {
                let next = AtomicUsize::new(0);
                while let Ok((mut inbound, _)) = listener.accept().await {
                    let target = endpoints.lock().ok().and_then(|list| {
                        (!list.is_empty())
                            .then(|| list[next.fetch_add(1, Ordering::Relaxed) % list.len()])
                    });
                    let refused = refused.clone();
                    tokio::spawn(async move {
                        let Some(target) = target else {
                            refused.fetch_add(1, Ordering::Relaxed);
                            return;
                        };
                        match TcpStream::connect(target).await {
                            Ok(mut outbound) => {
                                let _ = copy_bidirectional(&mut inbound, &mut outbound).await;
                            }
                            Err(_) => {
                                refused.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    });
                }
            })
        };
        Ok(Self {
            addr,
            endpoints,
            accept,
            refused,
        })
    }

    /// Adds an endpoint (a replica became ready).
    pub fn add(&self, endpoint: SocketAddr) {
        if let Ok(mut list) = self.endpoints.lock()
            && !list.contains(&endpoint)
        {
            list.push(endpoint);
        }
    }

    /// Removes an endpoint (a replica is stopping); its open connections run on.
    pub fn remove(&self, endpoint: SocketAddr) {
        if let Ok(mut list) = self.endpoints.lock() {
            list.retain(|e| *e != endpoint);
        }
    }

    /// The current endpoints.
    pub fn endpoints(&self) -> Vec<SocketAddr> {
        self.endpoints.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// How many connections found no endpoint or were refused by theirs so far.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::Relaxed)
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
