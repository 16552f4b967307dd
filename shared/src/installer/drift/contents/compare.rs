//! Any kind but Secrets: the live object, read, compared field by field with the
//! manifest's, and who wrote each field that differs.

use serde_json::Value;

use super::{
    findings::{Difference, MAX_COMPARED},
    helm_owned::helm_owned_beyond,
    scalars::same_scalar_at,
};
use crate::installer::release_objects::HELM_MANAGER;

/// The fields the chart sets in `expected` whose value `live` does not hold, and the
/// fields helm's own managed-fields entries claim that the chart does not set (written as
/// `helm` by someone else), at most [`MAX_COMPARED`]; `true` when there are more. Of
/// metadata, only labels and annotations are the chart's; `status` is not. Values the API
/// server stores in another form compare equal (`0.5` and `500m` where a quantity is,
/// `0644` and `420` as Go's YAML reads a plain scalar).
pub fn differing_fields(expected: &Value, live: &Value) -> (Vec<Difference>, bool) {
    let Some(fields) = expected.as_object() else {
        return (Vec::new(), false);
    };
    let no_entries = Value::Null;
    let managed = live
        .pointer("/metadata/managedFields")
        .unwrap_or(&no_entries);
    let mut walk = Walk {
        managed,
        found: Vec::new(),
    };
    for (key, value) in fields {
        match key.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for part in ["labels", "annotations"] {
                    if let Some(set) = value.get(part) {
                        let at = live.get("metadata").and_then(|m| m.get(part));
                        walk.compare(set, at, format!("metadata.{part}"));
                    }
                }
            }
            _ => walk.compare(value, live.get(key), key.clone()),
        }
    }
    let mut differences: Vec<Difference> = walk
        .found
        .into_iter()
        .map(|(field, value)| Difference {
            live_digest: Some(digest(value.unwrap_or(&Value::Null))),
            helm_only: written_by_helm_alone(managed, &field),
            field,
        })
        .collect();
    // What helm's entries claim beyond the chart is never helm's own reading.
    for field in helm_owned_beyond(managed, expected) {
        if differences.len() > MAX_COMPARED {
            break;
        }
        differences.push(Difference {
            live_digest: None,
            helm_only: false,
            field,
        });
    }
    let more = differences.len() > MAX_COMPARED;
    differences.truncate(MAX_COMPARED);
    (differences, more)
}

/// One object's comparison: its managed fields, and what differs so far.
struct Walk<'l> {
    managed: &'l Value,
    found: Vec<(String, Option<&'l Value>)>,
}

impl<'l> Walk<'l> {
    fn compare(&mut self, expected: &Value, live: Option<&'l Value>, at: String) {
        if self.found.len() > MAX_COMPARED {
            return;
        }
        match (expected, live) {
            // YAML's null sets nothing.
            (Value::Null, _) => {}
            // An empty map or list is stored as none where Go's omitempty drops it
            // (`nodeSelector: {}`, `tolerations: []`), though the managed fields still
            // name it as applied: the API server does that, not drift.
            (Value::Object(map), None) if map.is_empty() => {}
            (Value::Array(list), None) if list.is_empty() => {}
            // A struct the chart leaves empty (a selector that selects everything, a
            // strategy left to its defaults) holds what the API server or a writer put
            // there: the first check after the attempt takes defaults for helm's own
            // (the baseline), a later change is drift. A map of strings left empty
            // (labels, a node selector) takes additions beside it, as any map does.
            (Value::Object(map), Some(Value::Object(items)))
                if map.is_empty() && items.values().any(|v| v.is_object() || v.is_array()) =>
            {
                self.found.push((at, live));
            }
            (Value::Object(map), Some(Value::Object(live))) => {
                for (key, value) in map {
                    self.compare(value, live.get(key), format!("{at}.{key}"));
                }
            }
            // A list owned whole (atomic) is the chart's as a whole: as many items, each
            // the chart's.
            (Value::Array(list), Some(Value::Array(items))) if self.owned_whole(&at) => {
                if list.len() != items.len() {
                    self.found.push((at, live));
                    return;
                }
                for (index, (item, peer)) in list.iter().zip(items).enumerate() {
                    self.compare(item, Some(peer), format!("{at}[{index}]"));
                }
            }
            (Value::Array(list), Some(Value::Array(items)))
                if !list.is_empty() && list.iter().all(Value::is_object) =>
            {
                for (index, item) in list.iter().enumerate() {
                    // Items by their name where they have one (containers, env, ports): an
                    // item injected beside them is not the chart's, but a second item of
                    // the same name is (the later one wins where the list is read).
                    let (step, peer) = match item.get("name").and_then(Value::as_str) {
                        Some(name) => {
                            let mut named = items
                                .iter()
                                .filter(|l| l.get("name").and_then(Value::as_str) == Some(name));
                            let peer = named.next();
                            if named.next().is_some() {
                                self.found.push((format!("{at}[name={name}]"), peer));
                                continue;
                            }
                            (format!("[name={name}]"), peer)
                        }
                        None => (format!("[{index}]"), items.get(index)),
                    };
                    self.compare(item, peer, format!("{at}{step}"));
                }
            }
            (Value::Array(list), Some(Value::Array(items))) => {
                let same = list.len() == items.len()
                    && list
                        .iter()
                        .zip(items)
                        .all(|(e, l)| same_scalar_at(&at, e, l));
                if !same {
                    self.found.push((at, live));
                }
            }
            (expected, Some(value)) if same_scalar_at(&at, expected, value) => {}
            _ => self.found.push((at, live)),
        }
    }

    /// Whether an entry owns the field at `path` whole, as a leaf (an atomic list).
    fn owned_whole(&self, path: &str) -> bool {
        let Some(steps) = managed_steps(path) else {
            return false;
        };
        entries(self.managed).any(|entry| {
            let mut node = entry.get("fieldsV1");
            for step in &steps {
                node = node.and_then(|n| n.get(step));
            }
            node.and_then(Value::as_object)
                .is_some_and(|map| map.keys().all(|k| k == "."))
        })
    }
}

/// The entries of `metadata.managedFields` for the object itself (not a subresource).
fn entries(managed: &Value) -> impl Iterator<Item = &Value> {
    managed.as_array().into_iter().flatten().filter(|entry| {
        entry
            .get("subresource")
            .is_none_or(|s| s.as_str() == Some(""))
    })
}

/// Whether the managed fields `managed` (an object's `metadata.managedFields`) give the
/// field at `path` (or the field above it that holds it whole) to `helm` alone. A list
/// item named by its index cannot be told, and is not.
pub fn written_by_helm_alone(managed: &Value, path: &str) -> bool {
    let Some(steps) = managed_steps(path) else {
        return false;
    };
    let owners: Vec<&str> = entries(managed)
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
pub(super) fn managed_steps(path: &str) -> Option<Vec<String>> {
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
