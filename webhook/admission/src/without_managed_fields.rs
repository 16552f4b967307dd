//! Decodes an object from JSON without its `metadata.managedFields`.
//!
//! No admission decision reads managed fields, yet they are a third of a stored Workspace's
//! JSON, and `fieldsV1` decodes into a tree of maps (a key string and a map per entry):
//! decoding them cost more than the rest of the object. Here they are skipped by the
//! parser (`IgnoredAny`), which allocates nothing for them. Every other field still goes
//! through the object's own `Deserialize`, so nothing else changes: an unknown field, a
//! wrong type or bad JSON anywhere else is refused as before.

use providers_shared::api::{AdaptedObject, EntriesAdapter, MapKey};
use serde::{
    Deserialize, Deserializer,
    de::{DeserializeSeed, IgnoredAny, IntoDeserializer, MapAccess, value::CowStrDeserializer},
};

/// Decodes `json` into `T` with `metadata.managedFields` left out.
pub fn from_str<'de, T: Deserialize<'de>>(json: &'de str) -> serde_json::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let value = T::deserialize(AdaptedObject {
        inner: &mut deserializer,
        adapter: Place::Root,
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
    let decoded = T::deserialize(AdaptedObject {
        inner: serde_path_to_error::Deserializer::new(&mut deserializer, &mut track),
        adapter: Place::Root,
    });
    let error = match decoded {
        Ok(_) => deserializer.end().err()?,
        Err(error) => error,
    };
    let path = track.path().to_string();
    Some(if path == "." || path.is_empty() {
        error.to_string()
    } else {
        // The start of a long path is enough; the caller escapes the whole message.
        format!("{}: {error}", providers_shared::text::truncated(&path, 96))
    })
}

/// Where a value is in the object: its root, its `metadata`, or anywhere else. The one
/// rule for which member is the managed fields, for this decoding and for the shape walk
/// (`shape`), which reads them without counting.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    Root,
    Metadata,
    Elsewhere,
}

/// What becomes of a member's value.
pub(super) enum Member {
    /// Read, at this place.
    Walked(Place),
    /// Skipped by the parser: the API server's record of who set which field, which no
    /// decision reads.
    Skipped,
}

impl Place {
    /// What becomes of the value under `key` in a map at this place.
    pub(super) fn of_member(self, key: &str) -> Member {
        match (self, key) {
            (Place::Root, "metadata") => Member::Walked(Place::Metadata),
            (Place::Metadata, "managedFields") => Member::Skipped,
            _ => Member::Walked(Place::Elsewhere),
        }
    }
}

impl<'de> EntriesAdapter<'de> for Place {
    type Entries<M: MapAccess<'de>> = FilteredMap<M>;

    fn adapt<M: MapAccess<'de>>(self, entries: M) -> FilteredMap<M> {
        FilteredMap {
            inner: entries,
            place: self,
            next_is_metadata: false,
        }
    }
}

/// The object's entries, without `managedFields` at the metadata level; at the root, the
/// value of `metadata` is filtered in turn.
pub(super) struct FilteredMap<M> {
    inner: M,
    place: Place,
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
            match self.place.of_member(&key) {
                Member::Skipped => {
                    self.inner.next_value::<IgnoredAny>()?;
                    continue;
                }
                Member::Walked(place) => self.next_is_metadata = place == Place::Metadata,
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

/// Decodes the metadata's value with its entries filtered.
struct MetadataSeed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for MetadataSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(AdaptedObject {
            inner: deserializer,
            adapter: Place::Metadata,
        })
    }
}

#[cfg(test)]
mod tests;
