//! Decodes an object from JSON without its `metadata.managedFields`.
//!
//! No admission decision reads managed fields, yet they are a third of a stored Workspace's
//! JSON, and `fieldsV1` decodes into a tree of maps (a key string and a map per entry):
//! decoding them cost more than the rest of the object. Here they are skipped by the
//! parser (`IgnoredAny`), which allocates nothing for them. Every other field still goes
//! through the object's own `Deserialize`, so nothing else changes: an unknown field, a
//! wrong type or bad JSON anywhere else is refused as before.

use std::fmt;

use providers::api::MapKey;
use serde::{
    Deserialize, Deserializer,
    de::{
        DeserializeSeed, IgnoredAny, IntoDeserializer, MapAccess, Visitor,
        value::CowStrDeserializer,
    },
    forward_to_deserialize_any,
};

/// Decodes `json` into `T` with `metadata.managedFields` left out.
pub fn from_str<'de, T: Deserialize<'de>>(json: &'de str) -> serde_json::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let value = T::deserialize(Object {
        inner: &mut deserializer,
        level: Level::Root,
    })?;
    deserializer.end()?;
    Ok(value)
}

/// Why `json` does not decode into `T`, led by the path of the field at fault
/// (`spec.plan: missing field \`seal\``), or `None` if it decodes. Meant for after
/// [`from_str`] failed: decoding again with the path tracked costs nothing on the way of a
/// good object.
pub fn error_at_path<'de, T: Deserialize<'de>>(json: &'de str) -> Option<String> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let mut track = serde_path_to_error::Track::new();
    let decoded = T::deserialize(Object {
        inner: serde_path_to_error::Deserializer::new(&mut deserializer, &mut track),
        level: Level::Root,
    });
    let error = match decoded {
        Ok(_) => deserializer.end().err()?,
        Err(error) => error,
    };
    let path = track.path().to_string();
    Some(if path == "." || path.is_empty() {
        error.to_string()
    } else {
        format!("{path}: {error}")
    })
}

/// Where in the object a map is: the root (whose `metadata` is filtered) or the metadata
/// (whose `managedFields` is skipped).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Metadata,
}

/// A deserializer of one JSON object that hands the visitor a filtering map.
struct Object<D> {
    inner: D,
    level: Level,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Object<D> {
    type Error = D::Error;

    /// Every request is answered as a map: the root and the metadata are JSON objects, and
    /// anything else is refused by the inner deserializer as the type's own decoding would.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_map(Filtering {
            visitor,
            level: self.level,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// Passes the visitor a map that filters by `level`.
struct Filtering<V> {
    visitor: V,
    level: Level,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Filtering<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<V::Value, M::Error> {
        self.visitor.visit_map(FilteredMap {
            inner: map,
            level: self.level,
            next_is_metadata: false,
        })
    }
}

/// The object's entries, without `managedFields` at the metadata level; at the root, the
/// value of `metadata` is filtered in turn.
struct FilteredMap<M> {
    inner: M,
    level: Level,
    next_is_metadata: bool,
}

impl<'de, M: MapAccess<'de>> MapAccess<'de> for FilteredMap<M> {
    type Error = M::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, M::Error> {
        loop {
            let Some(MapKey(key)) = self.inner.next_key::<MapKey<'de>>()? else {
                return Ok(None);
            };
            match (self.level, key.as_ref()) {
                (Level::Metadata, "managedFields") => {
                    self.inner.next_value::<IgnoredAny>()?;
                    continue;
                }
                (Level::Root, "metadata") => self.next_is_metadata = true,
                _ => self.next_is_metadata = false,
            }
            let key: CowStrDeserializer<'de, M::Error> = key.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, M::Error> {
        if std::mem::take(&mut self.next_is_metadata) {
            self.inner.next_value_seed(MetadataSeed(seed))
        } else {
            self.inner.next_value_seed(seed)
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// Decodes the metadata's value through a filtering [`Object`].
struct MetadataSeed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for MetadataSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Object {
            inner: deserializer,
            level: Level::Metadata,
        })
    }
}

#[cfg(test)]
mod tests;
