//! The kinds of edge objects a decision reads from the caches.

use providers_shared::installer::Kind;

/// The kinds of edge objects a decision reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cached {
    Namespace,
    Attempt(Kind),
}
