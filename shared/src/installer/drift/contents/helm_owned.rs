//! Fields the managed fields give to `helm` that the release's manifest does not set.
//! Helm applies its manifest and nothing else, but for the release's own marks (below):
//! a field claimed by an entry named `helm` beyond the manifest was written by someone
//! else under helm's name.

use serde_json::{Map, Value};

use super::findings::MAX_COMPARED;
use crate::installer::release_objects::HELM_MANAGER;

/// What helm adds to every object of a release beside its manifest.
const HELM_LABELS: &[&str] = &["app.kubernetes.io/managed-by"];
const HELM_ANNOTATIONS: &[&str] = &[
    "meta.helm.sh/release-name",
    "meta.helm.sh/release-namespace",
];

/// The fields (paths, `spec.template.spec.volumes[name=data].hostPath`) that an entry of
/// `helm`'s in `managed` (an object's `metadata.managedFields`) owns and `expected` (the
/// manifest's object) does not set. Of metadata only labels and annotations count, and
/// never `status`.
pub fn helm_owned_beyond(managed: &Value, expected: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for entry in managed.as_array().into_iter().flatten() {
        let helm = entry.get("manager").and_then(Value::as_str) == Some(HELM_MANAGER);
        let own = entry
            .get("subresource")
            .is_none_or(|s| s.as_str() == Some(""));
        let Some(fields) = entry.get("fieldsV1").and_then(Value::as_object) else {
            continue;
        };
        if !helm || !own {
            continue;
        }
        for (key, child) in fields {
            match key.as_str() {
                "f:metadata" => {
                    for (part, kept) in [("labels", HELM_LABELS), ("annotations", HELM_ANNOTATIONS)]
                    {
                        let Some(owned) = child.get(format!("f:{part}")).and_then(Value::as_object)
                        else {
                            continue;
                        };
                        let set = expected.get("metadata").and_then(|m| m.get(part));
                        for (name, _) in owned
                            .iter()
                            .filter_map(|(k, v)| Some((k.strip_prefix("f:")?, v)))
                        {
                            if !kept.contains(&name) && set.and_then(|s| s.get(name)).is_none() {
                                found.push(format!("metadata.{part}.{name}"));
                            }
                        }
                    }
                }
                "f:status" => {}
                _ => beyond(key, child, Some(expected), "", &mut found),
            }
            if found.len() > MAX_COMPARED {
                break;
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Walks the owned field `key` (whose subtree is `child`) under `expected` at `at`.
fn beyond(key: &str, child: &Value, expected: Option<&Value>, at: &str, found: &mut Vec<String>) {
    if found.len() > MAX_COMPARED || key == "." {
        return;
    }
    let (path, next) = match key.split_once(':') {
        Some(("f", name)) => (
            match at.is_empty() {
                true => name.to_owned(),
                false => format!("{at}.{name}"),
            },
            expected.and_then(|e| e.get(name)),
        ),
        Some(("k", item)) => {
            let Ok(keys) = serde_json::from_str::<Map<String, Value>>(item) else {
                return;
            };
            let shown: Vec<String> = keys
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect();
            let peer = expected.and_then(Value::as_array).and_then(|items| {
                items
                    .iter()
                    .find(|i| keys.iter().all(|(k, v)| i.get(k) == Some(v)))
            });
            (format!("{at}[{}]", shown.join(",")), peer)
        }
        Some(("v", value)) => {
            let Ok(value) = serde_json::from_str::<Value>(value) else {
                return;
            };
            let peer = expected
                .and_then(Value::as_array)
                .and_then(|items| items.iter().find(|i| **i == value));
            (format!("{at}[{value}]"), peer)
        }
        Some(("i", index)) => (
            format!("{at}[{index}]"),
            index
                .parse::<usize>()
                .ok()
                .and_then(|i| expected.and_then(|e| e.get(i))),
        ),
        _ => return,
    };
    let Some(next) = next else {
        found.push(path);
        return;
    };
    for (key, grandchild) in child.as_object().into_iter().flatten() {
        beyond(key, grandchild, Some(next), &path, found);
    }
}
