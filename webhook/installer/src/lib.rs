//! `providers-installer`: the installer controller, a thin shell around
//! `providers_shared::installer`, in layers that show in the folders:
//!
//! - `process`: what a replica runs — the Workspace controller, the edges' Leases it takes,
//!   readiness;
//! - `duties`: what one replica does for the whole hub — the orphan and PlanValues sweeps;
//! - `reconcile`: one Workspace's pass — observe, decide (in the core), execute;
//! - `edge`: talking to one edge — its registry and probe, Helm's records, the provider's
//!   credential, the runner's logs;
//! - `support`: what every layer uses — configuration, metrics, Events, errors, the edges
//!   this replica holds.
//!
//! Below every layer, two crates: `providers_edge_watch`, what the installer knows of an
//! edge without asking it — metadata watches, their decoder and stream pool, compact
//! stores, and the installer's grants there (its Secret watch binds them when refused);
//! and `providers_runtime`, what both use — locks, the first-list mark, tasks,
//! reachability and the own-writes overlay — and what the installer shares with the
//! admission server: the admin port, the RBAC questions and the hub client.
//!
//! Every replica runs the Workspace controller, a probe and watches per Edge whose
//! fencing Lease it holds (ADR 40), and a watch of the published sealing keys; the one
//! holding the leader Lease also runs the hub-wide duties for its term. When the
//! replica's run ends, all of it is dropped. Every decision is taken by
//! `providers_shared::installer::decide` from a fresh read of the Workspace and its edge objects.
//!
//! The command `providers-webhook controller` builds the `Context` from its command line
//! and runs the replica; nothing here reads a clap argument or knows the admission server.
#![forbid(unsafe_code)]

// The layers, top to bottom (webhook/installer/src/LAYERS, checked by
// tests/tests/import_graph): a file names only files of its own layer or of the layers
// below it.
pub mod duties;
pub mod edge;
pub mod process;
pub mod reconcile;
pub mod support;

pub use reconcile::context::Context;
pub use support::config::{InstallerConfig, LeaseConfig, ProbeSettings};
