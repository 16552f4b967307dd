//! What the handlers share.

use std::sync::Arc;

use kube::{
    Api, Client,
    runtime::reflector::{ObjectRef, Store},
};
use providers::{
    api::{Edge, EdgeSpec, Recipe, RecipeSpec},
    seal::{Keyring, Sealer},
};

use crate::server::metrics::Metrics;

pub struct AppState {
    pub client: Client,
    pub sealer: Sealer,
    pub keyring: Keyring,
    pub allowlist: Vec<String>,
    pub recipes: Store<Recipe>,
    pub edges: Store<Edge>,
    pub metrics: Arc<Metrics>,
}

impl AppState {
    /// A Recipe from the watch cache, or straight from the API server when the cache has
    /// not seen it yet (created a moment ago).
    pub async fn recipe(&self, name: &str) -> Result<Option<RecipeSpec>, kube::Error> {
        if let Some(recipe) = self.recipes.get(&ObjectRef::new(name)) {
            return Ok(Some(recipe.spec.clone()));
        }
        Ok(Api::<Recipe>::all(self.client.clone())
            .get_opt(name)
            .await?
            .map(|r| r.spec))
    }

    /// An Edge from the watch cache, or straight from the API server.
    pub async fn edge(&self, name: &str) -> Result<Option<EdgeSpec>, kube::Error> {
        if let Some(edge) = self.edges.get(&ObjectRef::new(name)) {
            return Ok(Some(edge.spec.clone()));
        }
        Ok(Api::<Edge>::all(self.client.clone())
            .get_opt(name)
            .await?
            .map(|e| e.spec))
    }
}
