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

/// Appends the canonical JSON text of `value` to `out`. Runs on every seal signed and
/// every plan validated, so it writes straight into `out`: no text per scalar, no copy of
/// a key, and no sorting of a map that is already in order.
fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            out.push(b'{');
            // serde_json's map is ordered by key unless a crate turns on its
            // `preserve_order` feature; sort only then.
            let in_order = map.keys().is_sorted_by(|a, b| a.as_bytes() <= b.as_bytes());
            if in_order {
                write_entries(map.iter(), out);
            } else {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                write_entries(entries.into_iter(), out);
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

fn write_entries<'a>(entries: impl Iterator<Item = (&'a String, &'a Value)>, out: &mut Vec<u8>) {
    for (index, (key, value)) in entries.enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_scalar(key, out);
        out.push(b':');
        write(value, out);
    }
}

fn write_scalar(scalar: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    // Writing a string, number, boolean or null into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, scalar);
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
    fn nested_values_and_scalars_keep_their_text() {
        let value = json!({"z": [true, null, 1.5, -3, "\u{7f}é"], "a": {}, "m": []});
        assert_eq!(
            to_vec(&value),
            "{\"a\":{},\"m\":[],\"z\":[true,null,1.5,-3,\"\u{7f}é\"]}".as_bytes()
        );
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(
            to_vec(&json!({"k": "a\"b\n"})),
            br#"{"k":"a\"b\n"}"#.to_vec()
        );
    }
}
