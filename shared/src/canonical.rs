//! Canonical JSON: the exact bytes a seal signs.
//!
//! Object keys sorted by the bytes of their UTF-8 text; no insignificant white space; numbers and strings as serde_json writes them. Values that compare equal as
//! JSON therefore always give the same bytes, whatever order the apiserver returned.

use serde_json::Value;

/// The canonical JSON text of `value`.
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (index, (key, value)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_scalar(&Value::String(key.clone()), out);
                out.push(b':');
                write(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Serializing a scalar Value cannot fail.
    if let Ok(text) = serde_json::to_vec(value) {
        out.extend_from_slice(&text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_bytes() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":[1,2],"x":"s"}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":"s","y":[1,2]},"b":1}"#).unwrap();
        assert_eq!(to_vec(&a), to_vec(&b));
        assert_eq!(to_vec(&a), br#"{"a":{"x":"s","y":[1,2]},"b":1}"#.to_vec());
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(
            to_vec(&json!({"k": "a\"b\n"})),
            br#"{"k":"a\"b\n"}"#.to_vec()
        );
    }
}
