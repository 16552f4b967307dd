//! A bound on what an object in a review may cost before it is decoded.
//!
//! The mutating webhook sees a tenant's object before the API server has validated it
//! against the CRD schema, so its size and shape are whatever the tenant sent (up to the API
//! server's request limit). Decoding JSON into maps costs about a hundred bytes per entry
//! beyond the text itself; this scan walks the raw JSON once, allocating nothing, and
//! refuses objects with more entries, deeper nesting or longer keys than any Workspace the
//! API server would store. What passes decodes in memory linear in its size, with a small
//! constant.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The most a decoded object may hold.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Object members and array items, counted over the whole object.
    pub entries: usize,
    /// Nesting of objects and arrays.
    pub depth: usize,
    /// Bytes of one object key.
    pub key_bytes: usize,
}

/// Generous for any Workspace the API server stores (its spec.values are bounded by the CRD
/// schema; metadata, the plan and twenty attempt records come to a few hundred entries),
/// and small enough that decoding stays within a few MiB.
pub const WORKSPACE: Limits = Limits {
    entries: 20_000,
    depth: 32,
    key_bytes: 1_024,
};

/// Why an object was refused before decoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("it holds more than {0} entries")]
    TooManyEntries(usize),
    #[error("it nests deeper than {0} levels")]
    TooDeep(usize),
    #[error("it has a key longer than {0} bytes")]
    KeyTooLong(usize),
    #[error("it is not valid JSON: {0}")]
    Json(String),
}

/// Checks `raw` against `limits` without building anything from it.
pub fn check(raw: &RawValue, limits: Limits) -> Result<(), ShapeError> {
    let mut budget = Budget {
        limits,
        entries: 0,
        failure: None,
    };
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    let result = Walk {
        budget: &mut budget,
        depth: 0,
        item: false,
    }
    .deserialize(&mut deserializer);
    match (result, budget.failure) {
        (_, Some(failure)) => Err(failure),
        (Err(error), None) => Err(ShapeError::Json(error.to_string())),
        (Ok(()), None) => Ok(()),
    }
}

struct Budget {
    limits: Limits,
    entries: usize,
    /// The limit that stopped the walk; serde's own error carries no type we can match.
    failure: Option<ShapeError>,
}

impl Budget {
    fn fail<E: de::Error>(&mut self, failure: ShapeError) -> E {
        let error = E::custom(&failure);
        self.failure = Some(failure);
        error
    }

    fn count<E: de::Error>(&mut self) -> Result<(), E> {
        self.entries += 1;
        if self.entries > self.limits.entries {
            return Err(self.fail(ShapeError::TooManyEntries(self.limits.entries)));
        }
        Ok(())
    }
}

/// Visits one JSON value at `depth`.
struct Walk<'b> {
    budget: &'b mut Budget,
    depth: usize,
    /// The value is an array item: it counts as an entry.
    item: bool,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.item {
            // Called only for an item that is there.
            self.budget.count::<D::Error>()?;
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        let depth = self.depth + 1;
        if depth > self.budget.limits.depth {
            return Err(self
                .budget
                .fail(ShapeError::TooDeep(self.budget.limits.depth)));
        }
        while items
            .next_element_seed(Walk {
                budget: &mut *self.budget,
                depth,
                item: true,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
        let depth = self.depth + 1;
        if depth > self.budget.limits.depth {
            return Err(self
                .budget
                .fail(ShapeError::TooDeep(self.budget.limits.depth)));
        }
        let key_bytes = self.budget.limits.key_bytes;
        while let Some(length) = members.next_key_seed(KeyLength)? {
            if length > key_bytes {
                return Err(self.budget.fail(ShapeError::KeyTooLong(key_bytes)));
            }
            self.budget.count::<A::Error>()?;
            members.next_value_seed(Walk {
                budget: &mut *self.budget,
                depth,
                item: false,
            })?;
        }
        Ok(())
    }
}

/// The length of a key, read without keeping it.
struct KeyLength;

impl<'de> DeserializeSeed<'de> for KeyLength {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyLength {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<usize, E> {
        Ok(key.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    const SMALL: Limits = Limits {
        entries: 10,
        depth: 3,
        key_bytes: 8,
    };

    #[test]
    fn what_fits_passes() {
        assert_eq!(check(&raw(r#"{"a":[1,2],"b":{"c":"x"}}"#), SMALL), Ok(()));
        assert_eq!(check(&raw("[]"), SMALL), Ok(()));
        assert_eq!(check(&raw("\"s\""), SMALL), Ok(()));
    }

    #[test]
    fn each_limit_is_named() {
        let many = format!("[{}]", ["0"; 11].join(","));
        assert_eq!(
            check(&raw(&many), SMALL),
            Err(ShapeError::TooManyEntries(10))
        );
        assert_eq!(
            check(&raw(r#"{"a":{"b":{"c":{}}}}"#), SMALL),
            Err(ShapeError::TooDeep(3))
        );
        assert_eq!(
            check(&raw(r#"{"aaaaaaaaa":1}"#), SMALL),
            Err(ShapeError::KeyTooLong(8))
        );
    }

    #[test]
    fn exactly_the_limit_passes() {
        let ten = format!("[{}]", ["0"; 10].join(","));
        assert_eq!(check(&raw(&ten), SMALL), Ok(()));
    }
}
