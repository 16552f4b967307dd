//! Reading objects both ways: the raw JSON the API server returned (printed by `-o yaml`
//! and `-o json`, so fields this plugin does not know still show), and the typed value
//! the commands reason about.

use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ApiResource, DynamicObject, ListParams, TypeMeta},
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::report::user_error;

/// An object as returned, and as understood.
#[derive(Clone, Debug)]
pub struct Fetched<K> {
    pub raw: Value,
    pub typed: K,
}

fn api<K: Resource<DynamicType = ()>>(
    client: &Client,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<K>(&());
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Reads one object; a missing one is a [`UserError`](crate::report::UserError) that
/// says where it looked.
pub async fn get<K>(
    client: &Client,
    namespace: Option<&str>,
    name: &str,
) -> anyhow::Result<Fetched<K>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    match api::<K>(client, namespace).get(name).await {
        Ok(object) => parse(object),
        Err(kube::Error::Api(status)) if status.code == 404 => Err(not_found::<K>(namespace, name)),
        Err(error) => Err(error.into()),
    }
}

/// The error for an object that does not exist: where it was looked for, and how to list
/// what there is.
pub fn not_found<K: Resource<DynamicType = ()>>(
    namespace: Option<&str>,
    name: &str,
) -> anyhow::Error {
    let kind = K::kind(&()).to_lowercase();
    let place = namespace
        .map(|ns| format!(" in namespace {ns}"))
        .unwrap_or_default();
    let hint = match kind.as_str() {
        "workspace" => "list them with: kubectl provider status",
        "recipe" => "list them with: kubectl provider recipes",
        "edge" => "list them with: kubectl provider edges",
        _ => "check the name",
    };
    user_error(
        format!("{kind} {name:?} not found{place}"),
        Some(hint.to_owned()),
    )
}

/// Reads one object if it exists.
pub async fn get_opt<K>(
    client: &Client,
    namespace: Option<&str>,
    name: &str,
) -> anyhow::Result<Option<Fetched<K>>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    match api::<K>(client, namespace).get_opt(name).await? {
        Some(object) => Ok(Some(parse(object)?)),
        None => Ok(None),
    }
}

/// Lists objects, sorted by namespace and name. `namespace: None` lists cluster-scoped
/// kinds, or namespaced kinds in every namespace; `labels` is a label selector (`-l`).
pub async fn list<K>(
    client: &Client,
    namespace: Option<&str>,
    labels: Option<&str>,
) -> anyhow::Result<Vec<Fetched<K>>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let mut params = ListParams::default();
    if let Some(labels) = labels {
        params = params.labels(labels);
    }
    let listed = match api::<K>(client, namespace).list(&params).await {
        Ok(listed) => listed,
        // Listing a kind the server does not serve: the CRDs are not installed here.
        Err(kube::Error::Api(status)) if status.code == 404 => {
            return Err(user_error(
                format!(
                    "this cluster does not serve {}/{} {}: the providers CRDs are not installed",
                    K::group(&()),
                    K::version(&()),
                    K::plural(&())
                ),
                Some(
                    "check the kubeconfig context (--context), or ask the platform team".to_owned(),
                ),
            ));
        }
        Err(error) => return Err(error.into()),
    };
    let mut items: Vec<Fetched<K>> = listed
        .items
        .into_iter()
        .map(parse)
        .collect::<anyhow::Result<_>>()?;
    sort_by_namespace_and_name(&mut items);
    Ok(items)
}

/// Sorts objects by namespace, then name, as kubectl lists them.
pub fn sort_by_namespace_and_name<K: Resource>(items: &mut [Fetched<K>]) {
    items.sort_by(|a, b| {
        (a.typed.namespace(), a.typed.name_any()).cmp(&(b.typed.namespace(), b.typed.name_any()))
    });
}

/// The raw JSON of a returned object, and its typed reading.
pub fn parse<K>(mut object: DynamicObject) -> anyhow::Result<Fetched<K>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    // List items of built-in kinds come without apiVersion and kind; printed objects need them.
    object.types.get_or_insert_with(|| TypeMeta {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
    });
    let mut raw = serde_json::to_value(&object)?;
    // kubectl hides managed fields unless asked; they are noise in a plugin's output.
    if let Some(meta) = raw.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    let typed = serde_json::from_value(raw.clone()).map_err(|e| {
        user_error(
            format!(
                "{} {:?} cannot be read: {e}",
                K::kind(&()).to_lowercase(),
                object.name_any()
            ),
            Some(
                "the object does not match this plugin's API version: update kubectl-provider"
                    .to_owned(),
            ),
        )
    })?;
    Ok(Fetched { raw, typed })
}
