//! Reading `-f`, `--set` and `--set-string` into values.

use serde_json::{Map, Value};

use crate::{cli::ValueFlags, report::user_error, value_args::build};

/// The values the flags ask for, over `base`.
pub fn read_values(
    base: Map<String, Value>,
    flags: &ValueFlags,
) -> anyhow::Result<Map<String, Value>> {
    let mut files = Vec::new();
    for path in &flags.files {
        let text = std::fs::read_to_string(path).map_err(|e| {
            user_error(
                format!("cannot read values file {}: {e}", path.display()),
                None,
            )
        })?;
        files.push((path.display().to_string(), text));
    }
    build(base, &files, &flags.set, &flags.set_string).map_err(|e| user_error(e.to_string(), None))
}
