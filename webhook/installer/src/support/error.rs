//! The controller's errors: what ends a reconcile. Each has a short kind for metrics and
//! logs. What only makes a pass observe again (an edge that does not answer, a write that
//! found the state changed) is a `stop::Stop` other than `Failed`.

/// Why a reconcile ended early.
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
            Error::ReleaseRecord { .. } => "release_record",
            Error::Serialize { .. } => "serialize",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
