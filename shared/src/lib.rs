//! The core of sealed provider installs: API types, plan resolution, sealing, the
//! admission decision and the installer state machine, as pure functions.
#![forbid(unsafe_code)]

pub mod admission;
pub mod api;
pub mod canonical;
pub mod execution;
pub mod installer;
pub mod organization;
pub mod plan;
pub mod plan_values;
mod schema;
pub mod seal;
pub mod tenant_values;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod verify;
