//! Decodes a [`SealedPlan`] in one pass.
//!
//! `#[serde(flatten)]` would buffer the whole plan (values, execution rules, owner) into
//! serde's intermediate `Content` tree and decode it a second time from there; a Workspace
//! carries up to a few sealed plans (spec.plan and the plans kept for rollback), so that
//! buffering was the largest single cost of decoding one. Here the seal is taken out of
//! the map as the parser meets it, and every other entry goes straight to [`Plan`]'s own
//! `Deserialize`: the same JSON is accepted and refused as with `flatten`.

use serde::{
    Deserialize, Deserializer,
    de::{self, DeserializeSeed, IntoDeserializer, MapAccess, value::CowStrDeserializer},
};

use super::{
    map_adapter::{AdaptedObject, EntriesAdapter, MapKey},
    plan::{Plan, Seal, SealedPlan},
};

impl<'de> Deserialize<'de> for SealedPlan {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut seal = None;
        let plan = Plan::deserialize(AdaptedObject {
            inner: deserializer,
            adapter: SealSlot(&mut seal),
        })?;
        let seal = seal.ok_or_else(|| de::Error::missing_field("seal"))?;
        Ok(SealedPlan { plan, seal })
    }
}

/// Where the seal goes when the sealed plan's entries pass by.
struct SealSlot<'s>(&'s mut Option<Seal>);

impl<'de, 's> EntriesAdapter<'de> for SealSlot<'s> {
    type Entries<M: MapAccess<'de>> = SealApartMap<'s, M>;

    fn adapt<M: MapAccess<'de>>(self, entries: M) -> SealApartMap<'s, M> {
        SealApartMap {
            inner: entries,
            seal: self.0,
        }
    }
}

/// The sealed plan's entries without `seal`, which goes into its slot.
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

#[cfg(test)]
mod tests;
