//! What the Edge watch and each edge's probe work with: the hub, the edges known in this
//! term, the metrics, which edges this replica holds, its name, and the probe's settings.

use std::{sync::Arc, time::Duration};

use kube::Client;

use super::registry::Edges;
use crate::controller::{metrics::Metrics, shards::Shards};

pub struct EdgeHandles {
    pub hub: Client,
    pub edges: Edges,
    pub metrics: Arc<Metrics>,
    pub shards: Arc<Shards>,
    /// This replica's name, written into the Edges' status.
    pub identity: String,
    pub probe: ProbeSettings,
}

/// How each edge is probed and connected to.
#[derive(Clone, Debug)]
pub struct ProbeSettings {
    /// How often a Ready edge is probed.
    pub interval: Duration,
    /// The longest wait between probes of an unreachable edge.
    pub max_backoff: Duration,
    /// The only namespace an edge's kubeconfig Secret may be in.
    pub credentials_namespace: String,
    /// Whether an edge's kubeconfig may run a program for its credentials.
    pub allow_kubeconfig_exec: bool,
    /// How many watch streams share one connection to an edge.
    pub watch_streams_per_connection: u16,
}
