//! `providers-runtime`: the generic primitives every layer of the webhook and the installer
//! uses, and which use none of them: the one policy for a poisoned lock (`locks`), the mark
//! a watch sets at its first list (`synced`), a task that ends with whoever holds it
//! (`task`), what "the edge is unreachable" means (`unreachable`), and the overlay of the
//! installer's own writes over a watch cache (`own_writes`).
//!
//! And what both processes run on: the hub API client from the command line and the
//! User-Agent each says it is (`client`), shutdown on SIGTERM or SIGINT (`shutdown`), the
//! plain-HTTP admin port (`/metrics`, `/healthz`, `/readyz`: `admin`), and the RBAC
//! questions both ask as a user by SubjectAccessReview (`authz`).
//!
//! The installer's edge watch (`providers-edge-watch`), the installer
//! (`providers-installer`) and the admission server (`providers-admission`) build on
//! these; nothing here knows of any of them.
#![forbid(unsafe_code)]

pub mod admin;
pub mod authz;
pub mod client;
// The errors the Kubernetes client gives, for other crates' tests.
#[cfg(any(test, feature = "testing"))]
pub mod kube_errors;
pub mod locks;
pub mod own_writes;
pub mod shutdown;
pub mod synced;
pub mod task;
pub mod unreachable;
