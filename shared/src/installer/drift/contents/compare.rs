//! Any kind but Secrets: the live object, read, compared field by field with the
//! manifest's, and who wrote each field that differs.

use serde_json::Value;

use super::findings::Difference;
use crate::installer::release_objects::{HELM_MANAGER, MAX_FIELDS};

/// The fields the chart sets in `expected` whose value `live` does not hold, at most
/// [`MAX_FIELDS`]; `true` when there are more. Of metadata, only labels and annotations
/// are the chart's; `status` is not. Values the API server writes in another form compare
/// equal (`0.5` and `500m`).
pub fn differing_fields(expected: &Value, live: &Value) -> (Vec<Difference>, bool) {
    let mut found: Vec<(String, Option<&Value>)> = Vec::new();
    let Some(fields) = expected.as_object() else {
        return (Vec::new(), false);
    };
    for (key, value) in fields {
        match key.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for part in ["labels", "annotations"] {
                    if let Some(set) = value.get(part) {
                        let at = live.get("metadata").and_then(|m| m.get(part));
                        compare(set, at, format!("metadata.{part}"), &mut found);
                    }
                }
            }
            _ => compare(value, live.get(key), key.clone(), &mut found),
        }
    }
    let more = found.len() > MAX_FIELDS;
    found.truncate(MAX_FIELDS);
    let managed = live.pointer("/metadata/managedFields");
    let differences = found
        .into_iter()
        .map(|(field, value)| Difference {
            live_digest: Some(digest(value.unwrap_or(&Value::Null))),
            helm_only: managed.is_some_and(|m| written_by_helm_alone(m, &field)),
            field,
        })
        .collect();
    (differences, more)
}

/// Whether the managed fields `managed` (an object's `metadata.managedFields`) give the
/// field at `path` (or the field above it that holds it whole) to `helm` alone. A list
/// item named by its index cannot be told, and is not.
pub fn written_by_helm_alone(managed: &Value, path: &str) -> bool {
    let Some(steps) = managed_steps(path) else {
        return false;
    };
    let owners: Vec<&str> = managed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| {
            entry
                .get("subresource")
                .is_none_or(|s| s.as_str() == Some(""))
        })
        .filter(|entry| owns(entry.get("fieldsV1"), &steps))
        .map(|entry| {
            entry
                .get("manager")
                .and_then(Value::as_str)
                .unwrap_or_default()
        })
        .collect();
    !owners.is_empty() && owners.iter().all(|m| *m == HELM_MANAGER)
}

/// A path's steps as `fieldsV1` keys: `f:spec`, `k:{"name":"web"}`.
fn managed_steps(path: &str) -> Option<Vec<String>> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (field, item) = match part.split_once('[') {
            Some((field, item)) => (field, Some(item.strip_suffix(']')?)),
            None => (part, None),
        };
        if !field.is_empty() {
            steps.push(format!("f:{field}"));
        }
        if let Some(item) = item {
            let (key, value) = item.split_once('=')?;
            steps.push(format!("k:{}", serde_json::json!({ key: value })));
        }
    }
    Some(steps)
}

/// Whether the `fieldsV1` tree `fields` holds `steps`, or a field above them whole.
fn owns(fields: Option<&Value>, steps: &[String]) -> bool {
    let mut node = fields;
    for step in steps {
        match node.and_then(Value::as_object) {
            // A leaf above the path: the field is owned whole.
            Some(map) if map.is_empty() || map.keys().all(|k| k == ".") => return true,
            Some(map) => node = map.get(step),
            None => return false,
        }
    }
    node.is_some()
}

pub(super) fn digest(value: &Value) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(value.to_string()))
}

fn compare<'l>(
    expected: &Value,
    live: Option<&'l Value>,
    at: String,
    found: &mut Vec<(String, Option<&'l Value>)>,
) {
    if found.len() > MAX_FIELDS {
        return;
    }
    match (expected, live) {
        // YAML's null sets nothing; an empty map or list may be stored as none.
        (Value::Null, _) => {}
        (Value::Object(map), None) if map.is_empty() => {}
        (Value::Array(list), None) if list.is_empty() => {}
        (Value::Object(map), Some(Value::Object(live))) => {
            for (key, value) in map {
                compare(value, live.get(key), format!("{at}.{key}"), found);
            }
        }
        (Value::Array(list), Some(Value::Array(live)))
            if list.iter().all(|item| item.is_object()) =>
        {
            for (index, item) in list.iter().enumerate() {
                // Items by their name where they have one (containers, env, ports):
                // an item injected beside them is not the chart's.
                let (step, peer) = match item.get("name").and_then(Value::as_str) {
                    Some(name) => (
                        format!("[name={name}]"),
                        live.iter()
                            .find(|l| l.get("name").and_then(Value::as_str) == Some(name)),
                    ),
                    None => (format!("[{index}]"), live.get(index)),
                };
                compare(item, peer, format!("{at}{step}"), found);
            }
        }
        (Value::Array(list), Some(Value::Array(items))) => {
            let same =
                list.len() == items.len() && list.iter().zip(items).all(|(e, l)| same_scalar(e, l));
            if !same {
                found.push((at, live));
            }
        }
        (expected, Some(value)) if same_scalar(expected, value) => {}
        _ => found.push((at, live)),
    }
}

/// Whether two values are the same, also when the API server stored them in its own form:
/// numbers by value, quantities (`1Gi`, `0.5`, `500m`) by amount.
pub(super) fn same_scalar(expected: &Value, live: &Value) -> bool {
    if expected == live {
        return true;
    }
    let amount = |value: &Value| match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => quantity(s),
        _ => None,
    };
    match (expected, live) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Object(_) | Value::Array(_) | Value::Bool(_), _) => false,
        (_, Value::String(_)) => match (amount(expected), amount(live)) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
            _ => false,
        },
        _ => false,
    }
}

/// A Kubernetes quantity's amount: a decimal number, then a binary (`Ki`..`Ei`) or decimal
/// (`n`, `u`, `m`, `k`, `M`..`E`) suffix or an exponent (`1e3`).
fn quantity(text: &str) -> Option<f64> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        exponent => 10f64.powi(exponent.strip_prefix(['e', 'E'])?.parse().ok()?),
    };
    Some(number * scale)
}
