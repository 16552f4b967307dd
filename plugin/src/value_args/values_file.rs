//! A `-f` values file: a YAML (or JSON) mapping.

use serde_json::{Map, Value};

use super::values_error::ValuesError;

/// Reads a values file's text: a YAML (or JSON) mapping.
pub fn parse_file(file: &str, text: &str) -> Result<Map<String, Value>, ValuesError> {
    let error = |reason: String| ValuesError::File {
        file: file.to_owned(),
        reason,
    };
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let value: Value = serde_norway::from_str(text).map_err(|e| error(e.to_string()))?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(error(format!(
            "must be a mapping of values, not {}",
            kind(&other)
        ))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}
