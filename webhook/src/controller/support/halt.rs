//! How an edge request or an action stops short of its end without ending the reconcile:
//! the edge did not answer, or what a write was based on changed in between. Both are
//! signals to observe again; `Error` is what ends a reconcile.

use crate::controller::{support::error::Error, support::unreachable::did_not_answer};

/// Why a request to an edge failed.
#[derive(Debug, thiserror::Error)]
pub enum EdgeFailure {
    /// The edge API did not answer: the decisions see the edge unreachable until it does.
    #[error("edge {edge} is unreachable: {message}")]
    Unreachable { edge: String, message: String },
    /// What ends the reconcile.
    #[error(transparent)]
    Failed(#[from] Error),
}

/// Why an action stopped short.
#[derive(Debug, thiserror::Error)]
pub enum Halt {
    /// What a write was based on changed in between (a precondition or `test` failed, or
    /// the object appeared): observe again and decide again.
    #[error("the state changed during {action}: {message}")]
    Interrupted {
        action: &'static str,
        message: String,
    },
    /// The edge API did not answer.
    #[error("edge {edge} is unreachable: {message}")]
    Unreachable { edge: String, message: String },
    /// What ends the reconcile.
    #[error(transparent)]
    Failed(#[from] Error),
}

impl From<EdgeFailure> for Halt {
    fn from(failure: EdgeFailure) -> Self {
        match failure {
            EdgeFailure::Unreachable { edge, message } => Halt::Unreachable { edge, message },
            EdgeFailure::Failed(error) => Halt::Failed(error),
        }
    }
}

/// An edge API error, as unreachable when the server did not answer.
pub fn edge_failure(edge: &str, source: kube::Error) -> EdgeFailure {
    if did_not_answer(&source) {
        EdgeFailure::Unreachable {
            edge: edge.to_owned(),
            message: source.to_string(),
        }
    } else {
        EdgeFailure::Failed(Error::Edge {
            edge: edge.to_owned(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube_errors::answered;

    #[test]
    fn an_edge_that_does_not_answer_is_unreachable() {
        let failure = edge_failure("edge-1", kube::Error::Service("connection refused".into()));
        assert!(
            matches!(&failure, EdgeFailure::Unreachable { edge, message }
                if edge == "edge-1" && message.contains("connection refused")),
            "{failure:?}"
        );
        assert!(matches!(Halt::from(failure), Halt::Unreachable { .. }));
    }

    #[test]
    fn an_edge_that_answers_with_an_error_ends_the_reconcile() {
        let failure = edge_failure("edge-1", answered(403));
        assert!(
            matches!(&failure, EdgeFailure::Failed(Error::Edge { edge, .. }) if edge == "edge-1"),
            "{failure:?}"
        );
        assert!(matches!(
            Halt::from(failure),
            Halt::Failed(Error::Edge { .. })
        ));
    }
}
