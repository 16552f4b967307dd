//! The controller's errors. Each has a short kind for metrics and logs.

/// Why a reconcile stopped early.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The hub API refused or failed a request.
    #[error("hub API: {0}")]
    Hub(#[source] kube::Error),
    /// The edge API answered with an error.
    #[error("edge {edge} API: {source}")]
    Edge {
        edge: String,
        #[source]
        source: kube::Error,
    },
    /// The edge API did not answer.
    #[error("edge {edge} is unreachable: {message}")]
    EdgeUnreachable { edge: String, message: String },
    /// What a write was based on changed in between (a precondition or `test` failed, or
    /// the object appeared): observe again and decide again.
    #[error("the state changed during {action}: {message}")]
    Interrupted {
        action: &'static str,
        message: String,
    },
    /// This replica may no longer write for the Workspace's edge (its fencing Lease is
    /// another's, or was not renewed in time): stop, write nothing more.
    #[error("edge {edge} is not this replica's to write to")]
    EdgeNotHeld { edge: String },
    /// A Helm release record could not be read or rewritten.
    #[error("Helm release record {secret}: {message}")]
    ReleaseRecord { secret: String, message: String },
    /// Something that cannot be serialized.
    #[error("cannot serialize {what}: {source}")]
    Serialize {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    /// The label of the `reconcile_errors` metric.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Hub(_) => "hub",
            Error::Edge { .. } => "edge",
            Error::EdgeUnreachable { .. } => "edge_unreachable",
            Error::Interrupted { .. } => "interrupted",
            Error::EdgeNotHeld { .. } => "edge_not_held",
            Error::ReleaseRecord { .. } => "release_record",
            Error::Serialize { .. } => "serialize",
        }
    }
}

/// Whether an API error means the server did not answer (as opposed to answering "no").
pub fn is_transport(error: &kube::Error) -> bool {
    !matches!(
        error,
        kube::Error::Api(_) | kube::Error::SerdeError(_) | kube::Error::BuildRequest(_)
    )
}

/// An edge API error, as unreachable when the server did not answer.
pub fn edge(edge: &str, source: kube::Error) -> Error {
    if is_transport(&source) {
        Error::EdgeUnreachable {
            edge: edge.to_owned(),
            message: source.to_string(),
        }
    } else {
        Error::Edge {
            edge: edge.to_owned(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
