//! Numbers as they come back from the API server.
//!
//! The API server (Go) reads a JSON number written without a fraction or an exponent as an
//! integer, and writes a float that holds a whole number without them. A negative zero is
//! the one value that does not survive this: written as `-0`, it is read back as the
//! integer 0. serde_json reads `-0` as the float -0.0 and writes it as `-0.0`. A plan sealed
//! over `-0.0` would no longer match its signature once stored (stored, it reads `0`), and
//! a value the tenant did not change would read as changed between two reviews. So every
//! value tree this API holds is read with a negative zero as the integer 0: the form it
//! takes after one trip through the API server.

use serde::{Deserialize, Deserializer};
use serde_json::{Number, Value};

/// Replaces every negative zero in `value` with the integer 0.
pub fn without_negative_zero(value: &mut Value) {
    match value {
        Value::Number(number) if is_negative_zero(number) => *number = Number::from(0),
        Value::Array(items) => items.iter_mut().for_each(without_negative_zero),
        Value::Object(map) => map.values_mut().for_each(without_negative_zero),
        _ => {}
    }
}

fn is_negative_zero(number: &Number) -> bool {
    number
        .as_f64()
        .is_some_and(|float| number.is_f64() && float == 0.0 && float.is_sign_negative())
}

/// `deserialize_with` for a value tree.
pub fn value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    let mut value = Value::deserialize(deserializer)?;
    without_negative_zero(&mut value);
    Ok(value)
}

/// `deserialize_with` for an optional value tree.
pub fn optional_value<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    let mut value = Option::<Value>::deserialize(deserializer)?;
    if let Some(value) = &mut value {
        without_negative_zero(value);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Deserialize)]
    struct Holder {
        #[serde(deserialize_with = "value")]
        values: Value,
        #[serde(default, deserialize_with = "optional_value")]
        more: Option<Value>,
    }

    fn read(text: &str) -> Holder {
        serde_json::from_str(text).expect("decodes")
    }

    #[test]
    fn a_negative_zero_reads_as_the_integer_zero_at_any_depth() {
        let holder =
            read(r#"{"values": {"a": -0, "b": [-0.0, {"c": -0e3}], "d": 0.0}, "more": {"x": -0}}"#);
        assert_eq!(holder.values, json!({"a": 0, "b": [0, {"c": 0}], "d": 0.0}));
        assert_eq!(
            serde_json::to_string(&holder.values).unwrap(),
            r#"{"a":0,"b":[0,{"c":0}],"d":0.0}"#
        );
        assert_eq!(holder.more, Some(json!({"x": 0})));
    }

    #[test]
    fn every_other_number_keeps_its_text() {
        let text = r#"{"values":{"a":-1,"b":-0.5,"c":1.0,"d":1e300,"e":18446744073709551615,"f":-9223372036854775808}}"#;
        let holder = read(text);
        let written = serde_json::to_string(&holder.values).unwrap();
        let plain: Value = serde_json::from_str(text).unwrap();
        assert_eq!(written, serde_json::to_string(&plain["values"]).unwrap());
        assert!(read(r#"{"values": null}"#).more.is_none());
    }
}
