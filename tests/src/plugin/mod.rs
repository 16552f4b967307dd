//! `kubectl provider` in tests: running it through the real kubectl, snapshot files for
//! its tables, and the catalog and writes its tests build on.

pub mod fixture;
mod run;
mod snapshot;

pub use run::{Run, collect, command, path_with_plugin, plugin_dir, run, run_offline};
pub use snapshot::{check_snapshot, normalize, snapshot_dir};
