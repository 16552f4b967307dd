//! A bound on what an object in a review may cost before it is decoded.
//!
//! The mutating webhook sees a tenant's object before the API server has validated it
//! against the CRD schema, so its size and shape are whatever the tenant sent (up to the API
//! server's request limit). Decoding JSON into maps costs about a hundred bytes per entry
//! beyond the text itself; this scan walks the raw JSON once, allocating nothing, and
//! refuses objects with more entries, deeper nesting or longer keys than any Workspace the
//! API server would store. What passes decodes in memory linear in its size, with a small
//! constant. `metadata.managedFields` is read but not counted: it is never decoded.
//!
//! A refused object is walked a second time, to say where the walk stopped. On the way out
//! of each level serde_json looks up the position of the text it stopped at (a `memchr`
//! over the text before it), so a refusal costs up to two walks and one such lookup per
//! level, at most [`WORKSPACE`]`.depth` of them.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::without_managed_fields::{Member, Place};

/// The most a decoded object may hold.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Object members and array items, counted over the whole object.
    pub entries: usize,
    /// Nesting of objects and arrays.
    pub depth: usize,
    /// Bytes of one object key.
    pub key_bytes: usize,
    /// Whether the value is a Kubernetes object whose `metadata.managedFields` is skipped
    /// uncounted (it is never decoded). Anything else is counted whole.
    pub object: bool,
}

/// Generous for any Workspace the API server stores (its spec.values are bounded by the CRD
/// schema; metadata, the plan and twenty attempt records come to a few hundred entries),
/// and small enough that decoding stays within a few MiB.
pub const WORKSPACE: Limits = Limits {
    entries: 20_000,
    depth: 32,
    key_bytes: 1_024,
    object: true,
};

/// Generous for any requester an authenticator produces (a name, a UID, groups, and a few
/// extra attributes with their values), and small enough that decoding stays within a MiB.
pub const USER_INFO: Limits = Limits {
    entries: 10_000,
    depth: 4,
    key_bytes: 1_024,
    object: false,
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

impl ShapeError {
    /// What the sender of a Workspace can do about it. A Workspace the webhook sealed and the
    /// installer wrote comes nowhere near these limits (its plans refer to their values by
    /// digest, ADR 35, and tenant values are bounded by the schema), so an object over them
    /// was built by hand or by a broken tool.
    pub fn workspace_remedy(&self) -> &'static str {
        match self {
            ShapeError::TooManyEntries(_) => {
                "a Workspace holds a few thousand at most (plans keep their values apart, by digest); this one was built by hand or by a broken tool: send fewer"
            }
            ShapeError::TooDeep(_) => {
                "a Workspace nests at most about 20 levels; this one was built by hand or by a broken tool: nest less"
            }
            ShapeError::KeyTooLong(_) => {
                "a Workspace's keys are names of at most a few hundred bytes; this one was built by hand or by a broken tool: use a shorter one"
            }
            ShapeError::Json(_) => "send the Workspace as valid JSON",
        }
    }
}

/// The most characters of a path a refusal shows: the start (`spec.values...`) is what
/// tells a person where to look.
const PATH_SHOWN: usize = 96;

/// A limit an object went over, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{error}", located(path))]
pub struct Refusal {
    /// Where the walk stopped (`spec.values.a.b`, `metadata.annotations`), control
    /// characters escaped and cut to [`PATH_SHOWN`] characters; empty at the root.
    pub path: String,
    pub error: ShapeError,
}

fn located(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    }
}

/// Checks `raw` against `limits` without building anything from it.
pub fn check(raw: &RawValue, limits: Limits) -> Result<(), Refusal> {
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    walk(&mut deserializer, limits).map_err(|error| Refusal {
        // Only a refused object pays for its path: the same walk again, tracked.
        path: path_of_refusal(raw, limits),
        error,
    })
}

fn walk<'de, D: Deserializer<'de>>(deserializer: D, limits: Limits) -> Result<(), ShapeError> {
    let mut budget = Budget {
        limits,
        entries: 0,
        failure: None,
    };
    let result = Walk {
        budget: &mut budget,
        depth: 0,
        item: false,
        place: if limits.object {
            Place::Root
        } else {
            Place::Elsewhere
        },
    }
    .deserialize(deserializer);
    match (result, budget.failure) {
        (_, Some(failure)) => Err(failure),
        (Err(error), None) => Err(ShapeError::Json(error.to_string())),
        (Ok(()), None) => Ok(()),
    }
}

/// Where the walk of `raw` stops. Walking again costs what the first walk cost, and
/// keeps the keys on the way down (each within `limits.key_bytes`).
fn path_of_refusal(raw: &RawValue, limits: Limits) -> String {
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    let mut track = serde_path_to_error::Track::new();
    // The outcome is known already; only the path is wanted.
    let _ = walk(
        serde_path_to_error::Deserializer::new(&mut deserializer, &mut track),
        limits,
    );
    let path = track.path().to_string();
    if path == "." {
        return String::new();
    }
    providers_shared::text::shown_with(&path, PATH_SHOWN)
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
    place: Place,
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
                place: Place::Elsewhere,
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
        while let Some(key) = members.next_key_seed(KeySeed { place: self.place })? {
            if key.length > key_bytes {
                return Err(self.budget.fail(ShapeError::KeyTooLong(key_bytes)));
            }
            self.budget.count::<A::Error>()?;
            match key.member {
                Member::Walked(place) => members.next_value_seed(Walk {
                    budget: &mut *self.budget,
                    depth,
                    item: false,
                    place,
                })?,
                // Read without keeping anything (serde_json still bounds its nesting).
                Member::Skipped => {
                    members.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A key's length and what to do with its value, read without keeping the key.
struct KeySeed {
    place: Place,
}

struct Key {
    length: usize,
    member: Member,
}

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<Key, E> {
        Ok(Key {
            length: key.len(),
            member: self.place.of_member(key),
        })
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
        object: true,
    };

    #[test]
    fn what_fits_passes() {
        assert_eq!(check(&raw(r#"{"a":[1,2],"b":{"c":"x"}}"#), SMALL), Ok(()));
        assert_eq!(check(&raw("[]"), SMALL), Ok(()));
        assert_eq!(check(&raw("\"s\""), SMALL), Ok(()));
    }

    fn refused(text: &str) -> (String, ShapeError) {
        let refusal = check(&raw(text), SMALL).unwrap_err();
        (refusal.path, refusal.error)
    }

    #[test]
    fn each_limit_is_named_with_where_the_walk_stopped() {
        let many = format!("{{\"a\":[{}]}}", ["0"; 11].join(","));
        // An item counts as it is read: the path names the first one over the limit.
        assert_eq!(
            refused(&many),
            ("a[9]".to_owned(), ShapeError::TooManyEntries(10))
        );
        assert_eq!(
            refused(r#"{"a":{"b":{"c":{}}}}"#),
            ("a.b.c".to_owned(), ShapeError::TooDeep(3))
        );
        assert_eq!(
            refused(r#"{"x":[{"aaaaaaaaa":1}]}"#),
            ("x[0]".to_owned(), ShapeError::KeyTooLong(8))
        );
        let keys: Vec<String> = (0..11).map(|i| format!("\"k{i}\":0")).collect();
        let at_root = check(&raw(&format!("{{{}}}", keys.join(","))), SMALL).unwrap_err();
        assert_eq!(at_root.path, "");
        assert_eq!(at_root.to_string(), "it holds more than 10 entries");
    }

    #[test]
    fn the_path_shown_is_escaped_and_bounded() {
        let deep = Limits {
            entries: 1_000,
            depth: 40,
            key_bytes: 1_024,
            object: true,
        };
        let key = format!("line\\n{}", "k".repeat(500));
        let mut text = "0".to_owned();
        for _ in 0..41 {
            text = format!("{{\"{key}\":{text}}}");
        }
        let refusal = check(&raw(&text), deep).unwrap_err();
        assert_eq!(refusal.error, ShapeError::TooDeep(40));
        assert!(refusal.path.starts_with("line\\nkkk"), "{}", refusal.path);
        assert!(!refusal.path.contains('\n'));
        // At most PATH_SHOWN characters of the path, some of them escaped, and "…".
        assert!(
            refusal.path.chars().count() <= PATH_SHOWN + 8,
            "{}",
            refusal.path
        );
    }

    #[test]
    fn the_managed_fields_of_the_metadata_are_not_counted_and_nothing_else_is_skipped() {
        // Room for the key, not for what managedFields holds.
        let narrow = Limits {
            key_bytes: 32,
            depth: 5,
            ..SMALL
        };
        let mut deep = "0".to_owned();
        for _ in 0..10 {
            deep = format!("{{\"f:x\":{deep}}}");
        }
        let many = format!("[{}]", ["0"; 50].join(","));
        let managed = format!("{{\"metadata\":{{\"managedFields\":[{deep},{many}]}}}}");
        assert_eq!(check(&raw(&managed), narrow), Ok(()));
        // Escaped, it is the same key.
        let escaped = managed.replace("managedFields", "managedFi\\u0065lds");
        assert_eq!(check(&raw(&escaped), narrow), Ok(()));
        // Anywhere else, the same key is walked like any other.
        for elsewhere in [
            format!("{{\"managedFields\":{many}}}"),
            format!("{{\"spec\":{{\"managedFields\":{many}}}}}"),
            format!("{{\"metadata\":{{\"labels\":{{\"managedFields\":{many}}}}}}}"),
        ] {
            assert_eq!(
                check(&raw(&elsewhere), narrow).map_err(|r| r.error),
                Err(ShapeError::TooManyEntries(10)),
                "{elsewhere}"
            );
        }
        // In what is not a Kubernetes object (the requester's userInfo), nothing is skipped.
        let not_an_object = Limits {
            object: false,
            ..narrow
        };
        for text in [&managed, &escaped] {
            assert_eq!(
                check(&raw(text), not_an_object).map_err(|r| r.error),
                Err(ShapeError::TooDeep(5)),
                "{text}"
            );
        }
    }

    #[test]
    fn exactly_the_limit_passes() {
        let ten = format!("[{}]", ["0"; 10].join(","));
        assert_eq!(check(&raw(&ten), SMALL), Ok(()));
    }
}
