//! Decodes a [`SealedPlan`] in one pass.
//!
//! `#[serde(flatten)]` would buffer the whole plan (values, execution rules, owner) into
//! serde's intermediate `Content` tree and decode it a second time from there; a Workspace
//! carries up to a few sealed plans (spec.plan and the plans kept for rollback), so that
//! buffering was the largest single cost of decoding one. Here the seal is taken out of
//! the map as the parser meets it, and every other entry goes straight to [`Plan`]'s own
//! `Deserialize`: the same JSON is accepted and refused as with `flatten`.

use std::{borrow::Cow, fmt, marker::PhantomData};

use serde::{
    Deserialize, Deserializer,
    de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor, value::CowStrDeserializer},
    forward_to_deserialize_any,
};

use super::plan::{Plan, Seal, SealedPlan};

impl<'de> Deserialize<'de> for SealedPlan {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut seal = None;
        let plan = Plan::deserialize(SealApart {
            inner: deserializer,
            seal: &mut seal,
        })?;
        let seal = seal.ok_or_else(|| de::Error::missing_field("seal"))?;
        Ok(SealedPlan { plan, seal })
    }
}

/// A deserializer of the sealed plan's map that hands the plan every entry but `seal`.
struct SealApart<'s, D> {
    inner: D,
    seal: &'s mut Option<Seal>,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for SealApart<'_, D> {
    type Error = D::Error;

    /// A sealed plan is a map whatever the plan asks for; anything else is refused by the
    /// inner deserializer with the plan's own expectation.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_map(SealApartVisitor {
            visitor,
            seal: self.seal,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct SealApartVisitor<'s, V> {
    visitor: V,
    seal: &'s mut Option<Seal>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for SealApartVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<V::Value, M::Error> {
        self.visitor.visit_map(SealApartMap {
            inner: map,
            seal: self.seal,
        })
    }
}

struct SealApartMap<'s, M> {
    inner: M,
    seal: &'s mut Option<Seal>,
}

impl<'de, M: MapAccess<'de>> MapAccess<'de> for SealApartMap<'_, M> {
    type Error = M::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, M::Error> {
        loop {
            let Some(MapKey(key)) = self.inner.next_key::<MapKey<'de>>()? else {
                return Ok(None);
            };
            if key == "seal" {
                if self.seal.is_some() {
                    return Err(de::Error::duplicate_field("seal"));
                }
                *self.seal = Some(self.inner.next_value()?);
                continue;
            }
            let key: CowStrDeserializer<'de, M::Error> = key.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, M::Error> {
        self.inner.next_value_seed(seed)
    }
}

/// A JSON object's key, borrowed from the input where it has no escapes: what a map
/// adapter reads to decide where the entry goes before handing the key on.
pub struct MapKey<'de>(pub Cow<'de, str>);

impl<'de> Deserialize<'de> for MapKey<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor<'de>(PhantomData<&'de ()>);
        impl<'de> Visitor<'de> for KeyVisitor<'de> {
            type Value = MapKey<'de>;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<MapKey<'de>, E> {
                Ok(MapKey(Cow::Borrowed(key)))
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<MapKey<'de>, E> {
                Ok(MapKey(Cow::Owned(key.to_owned())))
            }
            fn visit_string<E: de::Error>(self, key: String) -> Result<MapKey<'de>, E> {
                Ok(MapKey(Cow::Owned(key)))
            }
        }
        deserializer.deserialize_str(KeyVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests;
