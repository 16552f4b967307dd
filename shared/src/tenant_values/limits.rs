//! Bounds on a tenant's `spec.values`, whatever the Recipe allows. The CRD schema holds the
//! same bounds, so the API server refuses what the webhook would.

use serde_json::{Map, Value};

use super::value_error::{ValueError, render_path};

/// The most bytes the values may take as JSON text.
pub const MAX_BYTES: usize = 32 * 1024;
/// The deepest nesting of objects below `spec.values`.
pub const MAX_DEPTH: usize = 8;
/// The longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 128;
/// The most keys, counted over every level.
pub const MAX_KEYS: usize = 512;

/// The values' size, depth, key count and key lengths against these limits.
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
        if self.bytes > MAX_BYTES {
            return Err(ValueError::TooLarge { max: MAX_BYTES });
        }
        Ok(())
    }

    fn object<'a>(
        &mut self,
        map: &'a Map<String, Value>,
        depth: usize,
        path: &mut Vec<&'a str>,
    ) -> Result<(), ValueError> {
        if depth > MAX_DEPTH {
            return Err(ValueError::TooDeep { max: MAX_DEPTH });
        }
        self.add(2)?;
        for (key, value) in map {
            self.keys += 1;
            if self.keys > MAX_KEYS {
                return Err(ValueError::TooManyKeys { max: MAX_KEYS });
            }
            if key.len() > MAX_KEY_BYTES {
                return Err(ValueError::KeyTooLong {
                    path: render_path(path, key),
                    max: MAX_KEY_BYTES,
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
                if depth + 1 > MAX_DEPTH {
                    return Err(ValueError::TooDeep { max: MAX_DEPTH });
                }
                self.add(2)?;
                for item in items {
                    self.keys += 1;
                    if self.keys > MAX_KEYS {
                        return Err(ValueError::TooManyKeys { max: MAX_KEYS });
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
