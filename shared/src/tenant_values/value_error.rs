//! Why a tenant value was refused, and how a value's path and type are named in the
//! message.

use serde_json::Value;

/// How long a path in a message may get before it is cut.
const PATH_LIMIT: usize = 128;

/// Why a tenant value was refused. Each names the value's path under `spec.values`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error(
        "spec.values must be an object of chart values, not {found}; set it as `key: value` pairs (kubectl provider recipes lists the paths)"
    )]
    NotAnObject { found: &'static str },
    #[error(
        "spec.values takes more than {max} bytes as JSON; set only the paths the recipe lets you set"
    )]
    TooLarge { max: usize },
    #[error(
        "spec.values nests deeper than {max} levels; set only the paths the recipe lets you set"
    )]
    TooDeep { max: usize },
    #[error(
        "spec.values holds more than {max} keys and list items, counted over every level; set only the paths the recipe lets you set"
    )]
    TooManyKeys { max: usize },
    #[error(
        "spec.values.{path}: a key is longer than {max} bytes; no recipe path is that long: set only the paths the recipe lets you set"
    )]
    KeyTooLong { path: String, max: usize },
    #[error(
        "spec.values.{path}: recipe {recipe:?} does not let tenants set this path; settable paths: {allowed}"
    )]
    PathNotAllowed {
        path: String,
        recipe: String,
        allowed: String,
    },
    #[error("spec.values.{path}: must be {expected}, not {found}; set {expected} there")]
    WrongType {
        path: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error(
        "spec.values.{path}: {value} is not one of the allowed values {allowed:?}; set one of them"
    )]
    NotInEnum {
        path: String,
        value: String,
        allowed: Vec<String>,
    },
    #[error(
        "spec.values.{path}: {value} does not match the pattern {pattern:?}; set a value that matches it"
    )]
    PatternMismatch {
        path: String,
        value: String,
        pattern: String,
    },
    #[error(
        "spec.values.{path}: is {length} characters long; at most {max} are allowed: set a shorter value"
    )]
    TooLong {
        path: String,
        length: usize,
        max: i64,
    },
    #[error("spec.values.{path}: {value} is below the minimum {min}; set {min} or more")]
    BelowMinimum { path: String, value: f64, min: f64 },
    #[error("spec.values.{path}: {value} is above the maximum {max}; set {max} or less")]
    AboveMaximum { path: String, value: f64, max: f64 },
    #[error(
        "recipe {recipe:?} has an invalid pattern for {path}: {reason}; ask the platform team to fix the recipe"
    )]
    BadRecipePattern {
        recipe: String,
        path: String,
        reason: String,
    },
}

impl ValueError {
    /// The field the error is about, as a path from the object's root.
    pub fn field(&self) -> String {
        match self {
            ValueError::NotAnObject { .. }
            | ValueError::TooLarge { .. }
            | ValueError::TooDeep { .. }
            | ValueError::TooManyKeys { .. } => "spec.values".to_owned(),
            ValueError::KeyTooLong { path, .. }
            | ValueError::PathNotAllowed { path, .. }
            | ValueError::WrongType { path, .. }
            | ValueError::NotInEnum { path, .. }
            | ValueError::PatternMismatch { path, .. }
            | ValueError::TooLong { path, .. }
            | ValueError::BelowMinimum { path, .. }
            | ValueError::AboveMaximum { path, .. } => format!("spec.values.{path}"),
            ValueError::BadRecipePattern { .. } => "spec.recipe".to_owned(),
        }
    }
}

/// `a.b.key` for a message: control characters escaped, cut at [`PATH_LIMIT`] characters.
pub(super) fn render_path(path: &[&str], key: &str) -> String {
    let mut out = String::new();
    for segment in path.iter().copied().chain([key]) {
        if !out.is_empty() {
            out.push('.');
        }
        for character in segment.chars() {
            if out.chars().count() >= PATH_LIMIT {
                out.push('…');
                return out;
            }
            out.extend(character.escape_debug());
        }
    }
    out
}

pub(super) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(number) if number.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
