//! What the Edge watch and each edge's probe work with: the hub, the edges known to this
//! replica, the metrics, which edges this replica holds, its name, and the probe's settings.

use std::sync::Arc;

use kube::Client;

use super::registry::Edges;
use crate::support::{config::ProbeSettings, metrics::Metrics, ownership::Shards};

pub struct EdgeHandles {
    pub hub: Client,
    pub edges: Edges,
    pub metrics: Arc<Metrics>,
    pub shards: Arc<Shards>,
    /// This replica's name, written into the Edges' status.
    pub identity: String,
    pub probe: ProbeSettings,
}
