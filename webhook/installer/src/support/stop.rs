//! How a step of the installer stops short of its end: the one type a request to an edge,
//! an action and a whole pass end in when they do not simply complete. Only `Failed` ends
//! a reconcile with an error; the others say what the pass does next.

use crate::support::error::Error;
use providers_runtime::unreachable::did_not_answer;

/// Why a request, an action or a pass stopped short.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    /// What a write was based on changed in between (a precondition or `test` failed, or
    /// the object appeared): read the Workspace live, observe and decide again.
    #[error("the state changed during {action}: {message}")]
    Interrupted {
        action: &'static str,
        message: String,
    },
    /// The edge API did not answer: observe again, with the edge seen unreachable until
    /// it does.
    #[error("edge {edge} is unreachable: {message}")]
    EdgeDown { edge: String, message: String },
    /// This replica may no longer write for the Workspace's edge (its fencing Lease is
    /// another's, or was not renewed in time): write nothing more, wait for a change.
    #[error("edge {edge} is no longer this replica's")]
    EdgeNotHeld { edge: String },
    /// What ends the reconcile.
    #[error(transparent)]
    Failed(#[from] Error),
}

/// An edge API error: the edge down when the server did not answer, else a failure.
pub fn edge_failure(edge: &str, source: kube::Error) -> Stop {
    if did_not_answer(&source) {
        Stop::EdgeDown {
            edge: edge.to_owned(),
            message: source.to_string(),
        }
    } else {
        Stop::Failed(Error::Edge {
            edge: edge.to_owned(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use providers_runtime::kube_errors::answered;

    #[test]
    fn an_edge_that_does_not_answer_is_down() {
        let stop = edge_failure("edge-1", kube::Error::Service("connection refused".into()));
        assert!(
            matches!(&stop, Stop::EdgeDown { edge, message }
                if edge == "edge-1" && message.contains("connection refused")),
            "{stop:?}"
        );
    }

    #[test]
    fn an_edge_that_answers_with_an_error_ends_the_reconcile() {
        let stop = edge_failure("edge-1", answered(403));
        assert!(
            matches!(&stop, Stop::Failed(Error::Edge { edge, .. }) if edge == "edge-1"),
            "{stop:?}"
        );
    }
}
