//! Tenant values: checked against a Recipe's values schema, then merged over its defaults.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Mutex, OnceLock},
};

use regex::Regex;
use serde_json::{Map, Value};

use crate::{
    api::{ValueField, ValueType},
    text::quoted,
};

/// Bounds on a tenant's `spec.values`, whatever the Recipe allows. The CRD schema holds the
/// same bounds, so the API server refuses what the webhook would.
pub mod limits {
    /// The most bytes the values may take as JSON text.
    pub const MAX_BYTES: usize = 32 * 1024;
    /// The deepest nesting of objects below `spec.values`.
    pub const MAX_DEPTH: usize = 8;
    /// The longest key, in bytes.
    pub const MAX_KEY_BYTES: usize = 128;
    /// The most keys, counted over every level.
    pub const MAX_KEYS: usize = 512;
}

/// How long a path in a message may get before it is cut.
const PATH_LIMIT: usize = 128;

/// Why a tenant value was refused. Each names the value's path under `spec.values`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("spec.values must be an object of chart values, not {found}")]
    NotAnObject { found: &'static str },
    #[error(
        "spec.values takes more than {max} bytes as JSON; set only the paths the recipe lets you set"
    )]
    TooLarge { max: usize },
    #[error(
        "spec.values nests deeper than {max} levels; set only the paths the recipe lets you set"
    )]
    TooDeep { max: usize },
    #[error("spec.values holds more than {max} keys; set only the paths the recipe lets you set")]
    TooManyKeys { max: usize },
    #[error("spec.values.{path}: a key is longer than {max} bytes")]
    KeyTooLong { path: String, max: usize },
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
    #[error("spec.values.{path}: {value} does not match the pattern {pattern:?}")]
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

/// Checks the tenant's values: first against the [`limits`], in one walk that stops at the
/// first excess; then against the recipe's schema, walking the schema's tree and stopping
/// at the first key it does not hold. The cost is linear in the values; no path string is
/// built unless a value is refused.
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
    within_limits(map)?;
    let tree = SchemaTree::new(schema);
    let mut path = Vec::new();
    walk(recipe, &tree, &tree.root, map, &mut path)
}

/// The values' size, depth, key count and key lengths against the [`limits`].
pub fn within_limits(map: &Map<String, Value>) -> Result<(), ValueError> {
    let mut budget = Budget::default();
    let mut path = Vec::new();
    budget.object(map, 1, &mut path)
}

#[derive(Default)]
struct Budget {
    bytes: usize,
    keys: usize,
}

impl Budget {
    fn add(&mut self, bytes: usize) -> Result<(), ValueError> {
        self.bytes += bytes;
        if self.bytes > limits::MAX_BYTES {
            return Err(ValueError::TooLarge {
                max: limits::MAX_BYTES,
            });
        }
        Ok(())
    }

    fn object<'a>(
        &mut self,
        map: &'a Map<String, Value>,
        depth: usize,
        path: &mut Vec<&'a str>,
    ) -> Result<(), ValueError> {
        if depth > limits::MAX_DEPTH {
            return Err(ValueError::TooDeep {
                max: limits::MAX_DEPTH,
            });
        }
        self.add(2)?;
        for (key, value) in map {
            self.keys += 1;
            if self.keys > limits::MAX_KEYS {
                return Err(ValueError::TooManyKeys {
                    max: limits::MAX_KEYS,
                });
            }
            if key.len() > limits::MAX_KEY_BYTES {
                return Err(ValueError::KeyTooLong {
                    path: render_path(path, key),
                    max: limits::MAX_KEY_BYTES,
                });
            }
            // The key, its quotes, the colon and a comma.
            self.add(key.len() + 4)?;
            path.push(key);
            self.value(value, depth, path)?;
            path.pop();
        }
        Ok(())
    }

    fn value<'a>(
        &mut self,
        value: &'a Value,
        depth: usize,
        path: &mut Vec<&'a str>,
    ) -> Result<(), ValueError> {
        match value {
            Value::Object(map) => self.object(map, depth + 1, path),
            Value::Array(items) => {
                if depth + 1 > limits::MAX_DEPTH {
                    return Err(ValueError::TooDeep {
                        max: limits::MAX_DEPTH,
                    });
                }
                self.add(2)?;
                for item in items {
                    self.keys += 1;
                    if self.keys > limits::MAX_KEYS {
                        return Err(ValueError::TooManyKeys {
                            max: limits::MAX_KEYS,
                        });
                    }
                    self.add(1)?;
                    self.value(item, depth + 1, path)?;
                }
                Ok(())
            }
            Value::String(text) => self.add(text.len() + 2),
            Value::Number(_) => self.add(24),
            Value::Bool(_) | Value::Null => self.add(5),
        }
    }
}

/// The recipe's value paths as a tree of their segments.
struct SchemaTree<'s> {
    root: Node<'s>,
    /// Every settable path, for messages.
    paths: Vec<&'s str>,
}

#[derive(Default)]
struct Node<'s> {
    /// The field when a path ends here.
    field: Option<&'s ValueField>,
    children: BTreeMap<&'s str, Node<'s>>,
}

impl<'s> SchemaTree<'s> {
    fn new(schema: &'s [ValueField]) -> Self {
        let mut root = Node::default();
        for field in schema {
            let mut node = &mut root;
            for segment in field.path.split('.') {
                node = node.children.entry(segment).or_default();
            }
            node.field = Some(field);
        }
        Self {
            root,
            paths: schema.iter().map(|f| f.path.as_str()).collect(),
        }
    }

    /// The settable paths, as a message lists them (at most twenty).
    fn allowed(&self) -> String {
        if self.paths.is_empty() {
            return "none".to_owned();
        }
        let mut paths: Vec<&str> = self.paths.clone();
        paths.sort_unstable();
        let more = paths.len().saturating_sub(20);
        let mut text = paths.into_iter().take(20).collect::<Vec<_>>().join(", ");
        if more > 0 {
            text.push_str(&format!(" and {more} more"));
        }
        text
    }
}

fn walk<'a>(
    recipe: &str,
    tree: &SchemaTree<'_>,
    node: &Node<'_>,
    map: &'a Map<String, Value>,
    path: &mut Vec<&'a str>,
) -> Result<(), ValueError> {
    for (key, value) in map {
        let Some(child) = node.children.get(key.as_str()) else {
            return Err(not_allowed(recipe, tree, path, key));
        };
        match (value, child.field) {
            // An empty object below a path that leads to settable values sets nothing (the
            // merge leaves what is there); where a value belongs it is checked as one.
            (Value::Object(inner), None) if inner.is_empty() => {}
            (Value::Object(inner), _) if !child.children.is_empty() && !inner.is_empty() => {
                path.push(key);
                walk(recipe, tree, child, inner, path)?;
                path.pop();
            }
            (_, Some(field)) => check_leaf(recipe, field, &render_path(path, key), value)?,
            (_, None) => return Err(not_allowed(recipe, tree, path, key)),
        }
    }
    Ok(())
}

fn not_allowed(recipe: &str, tree: &SchemaTree<'_>, path: &[&str], key: &str) -> ValueError {
    ValueError::PathNotAllowed {
        path: render_path(path, key),
        recipe: recipe.to_owned(),
        allowed: tree.allowed(),
    }
}

/// `a.b.key` for a message: control characters escaped, cut at [`PATH_LIMIT`] characters.
fn render_path(path: &[&str], key: &str) -> String {
    let mut out = String::new();
    for segment in path.iter().copied().chain([key]) {
        if !out.is_empty() {
            out.push('.');
        }
        for c in segment.chars() {
            if out.chars().count() >= PATH_LIMIT {
                out.push('…');
                return out;
            }
            out.extend(c.escape_debug());
        }
    }
    out
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
                        value: quoted(text),
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
                value: quoted(&text),
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
        // An empty object sets nothing: it never replaces a default.
        (_, Value::Object(overlay)) if overlay.is_empty() => {}
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
    use crate::testing::field;
    use rstest::rstest;
    use serde_json::json;

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

    #[rstest]
    #[case(json!({"image": {"repository": "evil"}}), "spec.values.image", "does not let tenants set")]
    #[case(json!({"replicaCount": "3"}), "spec.values.replicaCount", "must be an integer, not a string")]
    #[case(json!({"replicaCount": 1.5}), "spec.values.replicaCount", "must be an integer")]
    #[case(json!({"replicaCount": 9}), "spec.values.replicaCount", "above the maximum 5")]
    #[case(json!({"replicaCount": 0}), "spec.values.replicaCount", "below the minimum 1")]
    #[case(json!({"ingress": {"host": "UPPER"}}), "spec.values.ingress.host", "does not match the pattern")]
    #[case(json!({"ingress": {"host": "a".repeat(21)}}), "spec.values.ingress.host", "at most 20")]
    #[case(json!({"log": {"level": "trace"}}), "spec.values.log.level", "not one of the allowed values")]
    #[case(json!({"metrics": {"enabled": "yes"}}), "spec.values.metrics.enabled", "must be a boolean")]
    #[case(json!({"ratio": [1]}), "spec.values.ratio", "must be a number, not a list")]
    #[case(json!({"ingress": null}), "spec.values.ingress", "does not let tenants set")]
    #[case(json!([1, 2]), "spec.values", "must be an object")]
    fn each_rule_names_the_path(#[case] values: Value, #[case] field: &str, #[case] text: &str) {
        let error = check("r", &schema(), Some(&values)).expect_err(&values.to_string());
        assert_eq!(error.field(), field, "{values}");
        assert!(error.to_string().contains(text), "{values}: {error}");
    }

    #[test]
    fn an_unknown_key_stops_the_walk_and_the_message_stays_short() {
        // One long key over a couple of thousand leaves: the shape that once cost hundreds
        // of MB, when a path string was built per leaf.
        let key = "k".repeat(100);
        let leaves: Map<String, Value> = (0..2_000).map(|i| (format!("l{i}"), json!(i))).collect();
        let values = json!({ key.clone(): leaves });
        let error = check("r", &schema(), Some(&values)).unwrap_err();
        assert!(
            matches!(error, ValueError::TooManyKeys { max: 512 }),
            "{error}"
        );
        let values = json!({ key: {"a": 1} });
        let error = check("r", &schema(), Some(&values)).unwrap_err();
        assert!(
            matches!(error, ValueError::PathNotAllowed { .. }),
            "{error}"
        );
        assert!(error.to_string().len() < 400, "{error}");
    }

    #[test]
    fn each_limit_is_enforced() {
        let mut deep = json!(1);
        for _ in 0..=limits::MAX_DEPTH {
            deep = json!({ "a": deep });
        }
        assert_eq!(
            check("r", &schema(), Some(&deep)),
            Err(ValueError::TooDeep {
                max: limits::MAX_DEPTH
            })
        );
        let long_key = json!({ "k".repeat(limits::MAX_KEY_BYTES + 1): 1 });
        assert!(matches!(
            check("r", &schema(), Some(&long_key)),
            Err(ValueError::KeyTooLong { .. })
        ));
        let large = json!({ "ingress": {"host": "x".repeat(limits::MAX_BYTES)} });
        assert_eq!(
            check("r", &schema(), Some(&large)),
            Err(ValueError::TooLarge {
                max: limits::MAX_BYTES
            })
        );
        let wide = json!({ "list": vec![0; limits::MAX_KEYS + 1] });
        assert_eq!(
            check("r", &schema(), Some(&wide)),
            Err(ValueError::TooManyKeys {
                max: limits::MAX_KEYS
            })
        );
    }

    #[test]
    fn a_value_quoted_in_a_message_is_bounded() {
        let values = json!({"log": {"level": "trace".repeat(1000)}});
        let error = check("r", &schema(), Some(&values)).unwrap_err();
        assert!(matches!(error, ValueError::NotInEnum { .. }), "{error}");
        assert!(error.to_string().len() < 300, "{error}");
    }

    #[test]
    fn an_object_where_a_scalar_belongs_is_the_wrong_type() {
        let values = json!({"replicaCount": {"a": 1}});
        let error = check("r", &schema(), Some(&values)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("must be an integer, not an object"),
            "{error}"
        );
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
