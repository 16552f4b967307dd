//! What "the edge is unreachable" means, said once.
//!
//! An edge is unreachable while the installer cannot trust what it knows of it: a request
//! to its API got no answer ([`did_not_answer`]: a probe, a read or a write), a watch of it
//! failed, or its watches did not list within their time. A decision then sees
//! `EdgeState::Unreachable(why)` and acts on nothing its caches hold; the probe, the
//! watches' next event, or an answered request clear it. An answer that refuses ("no",
//! an API status) is not unreachable: the edge answered.

use std::sync::{Arc, Mutex};

use crate::locks::Locked;

/// Whether a request got no answer from the API server (a connection, TLS or timeout
/// failure), as opposed to an answer that says "no", one that could not be decoded, or
/// one never sent.
pub fn did_not_answer(error: &kube::Error) -> bool {
    !matches!(
        error,
        kube::Error::Api(_) | kube::Error::SerdeError(_) | kube::Error::BuildRequest(_)
    )
}

/// Why one edge is thought unreachable, as its watches and the installer's writes last
/// found it (`None` while it answers). Cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct Reachability(Arc<Mutex<Option<String>>>);

impl Reachability {
    /// A watch or a request found the edge unreachable (`Some`) or answering (`None`).
    pub fn set(&self, why: Option<String>) {
        *self.0.locked() = why;
    }

    /// Why the edge is thought unreachable, when it is.
    pub fn why(&self) -> Option<String> {
        self.0.locked().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_refuses_is_not_unreachable() {
        assert!(!did_not_answer(&crate::kube_errors::answered(403)));
        let reachability = Reachability::default();
        let shared = reachability.clone();
        shared.set(Some("connection refused".into()));
        assert_eq!(reachability.why().as_deref(), Some("connection refused"));
        shared.set(None);
        assert_eq!(reachability.why(), None);
    }
}
