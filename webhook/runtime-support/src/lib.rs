//! `providers-runtime`: the generic primitives every layer of the webhook and the installer
//! uses, and which use none of them: the one policy for a poisoned lock (`locks`), the mark
//! a watch sets at its first list (`synced`), a task that ends with whoever holds it
//! (`task`), what "the edge is unreachable" means (`unreachable`), and the overlay of the
//! installer's own writes over a watch cache (`own_writes`).
//!
//! The installer's edge watch (`providers-edge-watch`) and the webhook crate both build on
//! these; nothing here knows of either.
#![forbid(unsafe_code)]

// The errors the Kubernetes client gives, for other crates' tests.
#[cfg(any(test, feature = "testing"))]
pub mod kube_errors;
pub mod locks;
pub mod own_writes;
pub mod synced;
pub mod task;
pub mod unreachable;
