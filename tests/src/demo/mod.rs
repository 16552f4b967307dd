//! The demo: a hub and an edge control plane, the webhook, the installer controller, the
//! job runner with a real helm, a chart repository, a Recipe, Edges and tenants; then a
//! scripted tenant session with `kubectl provider`.

pub mod session;
pub mod system;

pub use system::System;
