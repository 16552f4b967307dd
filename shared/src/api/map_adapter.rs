//! Decoding a JSON object through an adapter of its entries: a type's own `Deserialize`
//! reads the object, and the adapter decides on the way which entries it sees (the
//! one-pass [`super::SealedPlan`] takes the seal out; the webhook skips managed fields).

use std::{borrow::Cow, fmt, marker::PhantomData};

use serde::{
    Deserialize, Deserializer,
    de::{self, MapAccess, Visitor},
    forward_to_deserialize_any,
};

/// What stands between an object's entries and the visitor that reads them.
pub trait EntriesAdapter<'de> {
    /// The entries the visitor reads.
    type Entries<M: MapAccess<'de>>: MapAccess<'de, Error = M::Error>;
    /// Puts the adapter around the object's entries.
    fn adapt<M: MapAccess<'de>>(self, entries: M) -> Self::Entries<M>;
}

/// A deserializer of one object whose entries go through `adapter`. Whatever the type asks
/// for is answered as a map: anything but an object is refused by `inner` with the type's
/// own expectation.
pub struct AdaptedObject<D, A> {
    pub inner: D,
    pub adapter: A,
}

impl<'de, D: Deserializer<'de>, A: EntriesAdapter<'de>> Deserializer<'de> for AdaptedObject<D, A> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_map(AdaptedVisitor {
            visitor,
            adapter: self.adapter,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct AdaptedVisitor<V, A> {
    visitor: V,
    adapter: A,
}

impl<'de, V: Visitor<'de>, A: EntriesAdapter<'de>> Visitor<'de> for AdaptedVisitor<V, A> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<V::Value, M::Error> {
        self.visitor.visit_map(self.adapter.adapt(map))
    }
}

/// A JSON object's key, borrowed from the input where it has no escapes: what an adapter
/// reads to decide where the entry goes before handing the key on.
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
