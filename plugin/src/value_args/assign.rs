//! Writing values into a values object: one assignment at its path, or a whole file's
//! values merged over it.

use serde_json::{Map, Value};

use super::set_argument::Assignment;

/// Applies one assignment to a values object: sets the path (creating objects on the
/// way, replacing a scalar in the way, as helm does) or removes it and any object it
/// leaves empty.
pub fn apply(values: &mut Map<String, Value>, assignment: &Assignment) {
    let Some((last, parents)) = assignment.path.split_last() else {
        return;
    };
    match &assignment.value {
        Some(value) => {
            let mut current = values;
            for key in parents {
                let slot = current
                    .entry(key.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                current = match slot {
                    Value::Object(map) => map,
                    _ => return,
                };
            }
            current.insert(last.clone(), value.clone());
        }
        None => remove(values, parents, last),
    }
}

fn remove(values: &mut Map<String, Value>, parents: &[String], last: &str) {
    match parents.split_first() {
        None => {
            values.remove(last);
        }
        Some((first, rest)) => {
            if let Some(Value::Object(child)) = values.get_mut(first) {
                remove(child, rest, last);
                if child.is_empty() {
                    values.remove(first);
                }
            }
        }
    }
}

/// Merges `overlay` into `base`: objects merge key by key, anything else replaces.
pub fn merge(base: &mut Map<String, Value>, overlay: Map<String, Value>) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) => merge(existing, incoming),
            (_, Value::Null) => {
                base.remove(&key);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}
