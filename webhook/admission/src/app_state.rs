//! What the handlers share.

use std::{fmt::Debug, sync::Arc};

use k8s_openapi::ClusterResourceScope;
use serde::de::DeserializeOwned;

use kube::{
    Api, Client,
    runtime::reflector::{ObjectRef, Store},
};
use providers_shared::{
    api::{Edge, EdgeSpec, Recipe, RecipeSpec},
    seal::{Keyring, Sealer},
};

use super::{metrics::Metrics, stored_values::StoredValues};

pub struct AppState {
    pub client: Client,
    pub sealer: Sealer,
    pub keyring: Keyring,
    pub allowlist: Vec<String>,
    pub recipes: Store<Recipe>,
    pub edges: Store<Edge>,
    /// What is known of the stored PlanValues without asking the hub.
    pub stored_values: StoredValues,
    pub metrics: Arc<Metrics>,
}

impl AppState {
    /// A Recipe from the watch cache, or straight from the API server when the cache has
    /// not seen it yet (created a moment ago).
    pub async fn recipe(&self, name: &str) -> Result<Option<RecipeSpec>, kube::Error> {
        let recipe = cached_or_live(&self.recipes, &self.client, name).await?;
        Ok(recipe.map(|recipe| recipe.spec))
    }

    /// An Edge from the watch cache, or straight from the API server.
    pub async fn edge(&self, name: &str) -> Result<Option<EdgeSpec>, kube::Error> {
        let edge = cached_or_live(&self.edges, &self.client, name).await?;
        Ok(edge.map(|edge| edge.spec))
    }
}

/// A cluster-scoped object by name: from `store`, or read live when the store lacks it.
async fn cached_or_live<K>(
    store: &Store<K>,
    client: &Client,
    name: &str,
) -> Result<Option<K>, kube::Error>
where
    K: kube::Resource<Scope = ClusterResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Debug,
{
    if let Some(object) = store.get(&ObjectRef::new(name)) {
        return Ok(Some(K::clone(&object)));
    }
    Api::<K>::all(client.clone()).get_opt(name).await
}
