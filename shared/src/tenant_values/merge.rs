//! The merge of a tenant's values over a Recipe's defaults.

use serde_json::{Map, Value};

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
