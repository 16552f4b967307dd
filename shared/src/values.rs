//! Tenant values: checked against a Recipe's values schema, then merged over its defaults.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Mutex, OnceLock},
};

use regex::Regex;
use serde_json::{Map, Value};

use crate::api::{ValueField, ValueType};

/// Why a tenant value was refused. Each names the value's path under `spec.values`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("spec.values must be an object of chart values, not {found}")]
    NotAnObject { found: &'static str },
    #[error(
        "spec.values.{path}: recipe {recipe:?} does not let tenants set this path; settable paths: {allowed}"
    )]
    PathNotAllowed {
        path: String,
        recipe: String,
        allowed: String,
    },
    #[error("spec.values.{path}: must be {expected}, not {found}")]
    WrongType {
        path: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("spec.values.{path}: {value} is not one of the allowed values {allowed:?}")]
    NotInEnum {
        path: String,
        value: String,
        allowed: Vec<String>,
    },
    #[error("spec.values.{path}: {value:?} does not match the pattern {pattern:?}")]
    PatternMismatch {
        path: String,
        value: String,
        pattern: String,
    },
    #[error("spec.values.{path}: is {length} characters long; at most {max} are allowed")]
    TooLong {
        path: String,
        length: usize,
        max: i64,
    },
    #[error("spec.values.{path}: {value} is below the minimum {min}")]
    BelowMinimum { path: String, value: f64, min: f64 },
    #[error("spec.values.{path}: {value} is above the maximum {max}")]
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
            ValueError::NotAnObject { .. } => "spec.values".to_owned(),
            ValueError::PathNotAllowed { path, .. }
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

/// Checks every leaf of the tenant's values against the recipe's schema.
pub fn check(
    recipe: &str,
    schema: &[ValueField],
    values: Option<&Value>,
) -> Result<(), ValueError> {
    let Some(values) = values else { return Ok(()) };
    let Value::Object(map) = values else {
        return Err(ValueError::NotAnObject {
            found: type_name(values),
        });
    };
    let fields: BTreeMap<&str, &ValueField> = schema.iter().map(|f| (f.path.as_str(), f)).collect();
    let mut leaves = Vec::new();
    flatten("", map, &mut leaves);
    for (path, value) in leaves {
        let Some(field) = fields.get(path.as_str()) else {
            let allowed = if fields.is_empty() {
                "none".to_owned()
            } else {
                fields.keys().copied().collect::<Vec<_>>().join(", ")
            };
            return Err(ValueError::PathNotAllowed {
                path,
                recipe: recipe.to_owned(),
                allowed,
            });
        };
        check_leaf(recipe, field, &path, value)?;
    }
    Ok(())
}

/// Leaves of a values object with their dot paths. Empty objects have no leaves.
fn flatten<'a>(prefix: &str, map: &'a Map<String, Value>, out: &mut Vec<(String, &'a Value)>) {
    for (key, value) in map {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            Value::Object(inner) if !inner.is_empty() => flatten(&path, inner, out),
            _ => out.push((path, value)),
        }
    }
}

fn check_leaf(
    recipe: &str,
    field: &ValueField,
    path: &str,
    value: &Value,
) -> Result<(), ValueError> {
    let wrong = |expected| ValueError::WrongType {
        path: path.to_owned(),
        expected,
        found: type_name(value),
    };
    match field.type_ {
        ValueType::String => {
            let Value::String(text) = value else {
                return Err(wrong("a string"));
            };
            if let Some(max) = field.max_length {
                let length = text.chars().count();
                if i64::try_from(length).unwrap_or(i64::MAX) > max {
                    return Err(ValueError::TooLong {
                        path: path.to_owned(),
                        length,
                        max,
                    });
                }
            }
            if let Some(pattern) = &field.pattern {
                let anchored =
                    anchored_regex(pattern).map_err(|e| ValueError::BadRecipePattern {
                        recipe: recipe.to_owned(),
                        path: path.to_owned(),
                        reason: e.to_string(),
                    })?;
                if !anchored.is_match(text) {
                    return Err(ValueError::PatternMismatch {
                        path: path.to_owned(),
                        value: text.clone(),
                        pattern: pattern.clone(),
                    });
                }
            }
        }
        ValueType::Integer => {
            if !(value.is_i64() || value.is_u64()) {
                return Err(wrong("an integer"));
            }
            check_bounds(field, path, value)?;
        }
        ValueType::Number => {
            if !value.is_number() {
                return Err(wrong("a number"));
            }
            check_bounds(field, path, value)?;
        }
        ValueType::Boolean => {
            if !value.is_boolean() {
                return Err(wrong("a boolean"));
            }
        }
    }
    if let Some(allowed) = &field.enum_ {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !allowed.contains(&text) {
            return Err(ValueError::NotInEnum {
                path: path.to_owned(),
                value: text,
                allowed: allowed.clone(),
            });
        }
    }
    Ok(())
}

/// A recipe pattern compiled to match whole values. Compiling costs far more than matching
/// and recipes change rarely, so compiled patterns are kept, up to a bound.
fn anchored_regex(pattern: &str) -> Result<Regex, regex::Error> {
    const MAX_CACHED: usize = 512;
    static CACHE: OnceLock<Mutex<HashMap<String, Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(regex) = cache.lock().ok().and_then(|c| c.get(pattern).cloned()) {
        return Ok(regex);
    }
    let regex = Regex::new(&format!("^(?:{pattern})$"))?;
    if let Ok(mut cache) = cache.lock() {
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(pattern.to_owned(), regex.clone());
    }
    Ok(regex)
}

fn check_bounds(field: &ValueField, path: &str, value: &Value) -> Result<(), ValueError> {
    let Some(number) = value.as_f64() else {
        return Ok(());
    };
    if let Some(min) = field.minimum
        && number < min
    {
        return Err(ValueError::BelowMinimum {
            path: path.to_owned(),
            value: number,
            min,
        });
    }
    if let Some(max) = field.maximum
        && number > max
    {
        return Err(ValueError::AboveMaximum {
            path: path.to_owned(),
            value: number,
            max,
        });
    }
    Ok(())
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The recipe's defaults with the tenant's values merged over them: objects merge key by
/// key, anything else replaces.
pub fn merge(defaults: Option<&Value>, tenant: Option<&Value>) -> Value {
    let mut merged = match defaults {
        Some(Value::Object(map)) => Value::Object(map.clone()),
        _ => Value::Object(Map::new()),
    };
    if let Some(tenant) = tenant {
        merge_into(&mut merged, tenant);
    }
    merged
}

fn merge_into(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                match base.get_mut(key) {
                    Some(existing) => merge_into(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, overlay) => *base = overlay.clone(),
    }
}

/// Sets `value` at a dot path, creating objects on the way (and replacing non-objects).
pub fn set_path(root: &mut Value, path: &str, value: Value) {
    let mut node = root;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        let Value::Object(map) = node else { return };
        if parts.peek().is_none() {
            map.insert(part.to_owned(), value);
            return;
        }
        node = map
            .entry(part.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(path: &str, type_: ValueType) -> ValueField {
        ValueField {
            path: path.to_owned(),
            type_,
            description: None,
            enum_: None,
            pattern: None,
            max_length: None,
            minimum: None,
            maximum: None,
        }
    }

    fn schema() -> Vec<ValueField> {
        vec![
            ValueField {
                maximum: Some(5.0),
                minimum: Some(1.0),
                ..field("replicaCount", ValueType::Integer)
            },
            ValueField {
                pattern: Some("[a-z.]+".to_owned()),
                max_length: Some(20),
                ..field("ingress.host", ValueType::String)
            },
            ValueField {
                enum_: Some(vec!["debug".into(), "info".into()]),
                ..field("log.level", ValueType::String)
            },
            field("metrics.enabled", ValueType::Boolean),
            field("ratio", ValueType::Number),
        ]
    }

    #[test]
    fn allowed_values_pass() {
        let values = json!({"replicaCount": 3, "ingress": {"host": "a.example"}, "log": {"level": "info"},
            "metrics": {"enabled": true}, "ratio": 0.5});
        assert_eq!(check("r", &schema(), Some(&values)), Ok(()));
        assert_eq!(check("r", &schema(), None), Ok(()));
    }

    #[test]
    fn each_rule_names_the_path() {
        let cases = [
            (
                json!({"image": {"repository": "evil"}}),
                "spec.values.image.repository",
                "does not let tenants set",
            ),
            (
                json!({"replicaCount": "3"}),
                "spec.values.replicaCount",
                "must be an integer, not a string",
            ),
            (
                json!({"replicaCount": 1.5}),
                "spec.values.replicaCount",
                "must be an integer",
            ),
            (
                json!({"replicaCount": 9}),
                "spec.values.replicaCount",
                "above the maximum 5",
            ),
            (
                json!({"replicaCount": 0}),
                "spec.values.replicaCount",
                "below the minimum 1",
            ),
            (
                json!({"ingress": {"host": "UPPER"}}),
                "spec.values.ingress.host",
                "does not match the pattern",
            ),
            (
                json!({"ingress": {"host": "a".repeat(21)}}),
                "spec.values.ingress.host",
                "at most 20",
            ),
            (
                json!({"log": {"level": "trace"}}),
                "spec.values.log.level",
                "not one of the allowed values",
            ),
            (
                json!({"metrics": {"enabled": "yes"}}),
                "spec.values.metrics.enabled",
                "must be a boolean",
            ),
            (
                json!({"ratio": [1]}),
                "spec.values.ratio",
                "must be a number, not a list",
            ),
            (
                json!({"ingress": null}),
                "spec.values.ingress",
                "does not let tenants set",
            ),
            (json!([1, 2]), "spec.values", "must be an object"),
        ];
        for (values, field, text) in cases {
            let error = check("r", &schema(), Some(&values)).expect_err(&values.to_string());
            assert_eq!(error.field(), field, "{values}");
            assert!(error.to_string().contains(text), "{values}: {error}");
        }
    }

    #[test]
    fn pattern_must_match_in_full() {
        let values = json!({"ingress": {"host": "ok.example/../x"}});
        assert!(matches!(
            check("r", &schema(), Some(&values)),
            Err(ValueError::PatternMismatch { .. })
        ));
    }

    #[test]
    fn merge_overlays_objects_and_replaces_scalars() {
        let defaults = json!({"replicaCount": 1, "ingress": {"host": "d", "tls": true}});
        let tenant = json!({"ingress": {"host": "t"}});
        assert_eq!(
            merge(Some(&defaults), Some(&tenant)),
            json!({"replicaCount": 1, "ingress": {"host": "t", "tls": true}})
        );
        assert_eq!(merge(None, None), json!({}));
    }

    #[test]
    fn set_path_creates_objects() {
        let mut root = json!({"a": 1});
        set_path(&mut root, "hub.secret.name", json!("s"));
        set_path(&mut root, "a.b", json!(2));
        assert_eq!(
            root,
            json!({"a": {"b": 2}, "hub": {"secret": {"name": "s"}}})
        );
    }
}
