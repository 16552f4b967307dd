//! The writes of the actions, guarded: Workspace writes test its UID, edge deletions carry
//! UID preconditions, and a create that finds the object already there stops the pass so
//! the next one observes it (learning whose the object is, once, live).

use std::fmt::Debug;

use k8s_openapi::{NamespaceResourceScope, api::batch::v1::Job};
use kube::{
    Api, Client, Resource,
    api::{DeleteParams, PostParams, Preconditions, PropagationPolicy},
};
use providers_shared::installer::{Deletion, Kind};
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    edge::EdgeView,
    support::error::Error,
    support::stop::{self, Stop},
};
use providers_edge_watch::{Cached, EdgeCache, grants as edge_grants};

/// A write that found the state changed: decide again from a fresh observation.
fn interrupted(action: &'static str, status: &kube::core::Status) -> Stop {
    Stop::Interrupted {
        action,
        message: status.message.clone(),
    }
}

/// Maps a hub write error: a failed guard or a conflict interrupts the pass.
pub(super) fn hub_write(action: &'static str, error: kube::Error) -> Stop {
    match error {
        kube::Error::Api(status)
            if status.is_conflict() || status.is_already_exists() || is_failed_test(&status) =>
        {
            interrupted(action, &status)
        }
        other => Error::Hub(other).into(),
    }
}

/// Maps an edge write error the same way.
pub(super) fn edge_write(edge: &str, action: &'static str, error: kube::Error) -> Stop {
    match error {
        kube::Error::Api(status)
            if status.is_conflict() || status.is_already_exists() || is_failed_test(&status) =>
        {
            interrupted(action, &status)
        }
        other => stop::edge_failure(edge, other),
    }
}

/// A JSON patch whose `test` operation failed: the object is not the one observed.
pub(super) fn is_failed_test(status: &kube::core::Status) -> bool {
    status.code == 422
        && status.message == "the server rejected our request due to an error in our request"
}

/// The client of `edge`, while it is Ready.
pub(super) fn edge_client(name: &str, edge: &EdgeView) -> Result<Client, Stop> {
    edge.client.clone().ok_or_else(|| Stop::EdgeDown {
        edge: name.to_owned(),
        message: "no client for the edge".into(),
    })
}

pub(super) async fn create_in<K>(client: &Client, object: &K) -> Result<K, kube::Error>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug,
{
    let namespace = object.meta().namespace.clone().unwrap_or_default();
    let api: Api<K> = Api::namespaced(client.clone(), &namespace);
    let params = PostParams::default();
    let create = || api.create(&params, object);
    in_namespace::<K, _, _>(client, &namespace, create).await
}

/// Runs `call` in a release namespace: a Secret there is reached through the installer's
/// namespace grant, bound when the first call is refused (a namespace an older installer
/// prepared); the other kinds through its cluster role.
async fn in_namespace<K, T, Fut>(
    client: &Client,
    namespace: &str,
    call: impl Fn() -> Fut,
) -> Result<T, kube::Error>
where
    K: Resource<DynamicType = ()>,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    if kind_of::<K>() == Kind::Secret {
        edge_grants::with_grant(client, namespace, edge_grants::NAMESPACE_RIGHTS, call).await
    } else {
        call().await
    }
}

/// Creates an attempt object on the edge and records what came of it in the edge's cache.
pub(super) async fn create_learning<K>(
    cache: Option<&EdgeCache>,
    client: &Client,
    object: &K,
) -> Result<(), kube::Error>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug
        + 'static,
{
    let created = create_in(client, object).await;
    let api = Api::namespaced(
        client.clone(),
        object.meta().namespace.as_deref().unwrap_or_default(),
    );
    learn(cache, Cached::Attempt(kind_of::<K>()), api, object, created).await
}

/// The kind of an attempt object's type.
fn kind_of<K: Resource<DynamicType = ()>>() -> Kind {
    match K::kind(&()).as_ref() {
        "ServiceAccount" => Kind::ServiceAccount,
        "Role" => Kind::Role,
        "RoleBinding" => Kind::RoleBinding,
        "Job" => Kind::Job,
        _ => Kind::Secret,
    }
}

/// Records a create's result in the edge's cache. A create that finds the object already
/// there is how the installer learns it exists (it never probes first): it reads that one
/// object live, so the next decision sees whose it is, and the pass is interrupted.
pub(super) async fn learn<K>(
    cache: Option<&EdgeCache>,
    kind: Cached,
    api: Api<K>,
    object: &K,
    created: Result<K, kube::Error>,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + 'static,
{
    let Some(cache) = cache else {
        return created.map(|_| ());
    };
    match created {
        Ok(created) => {
            remember_write(cache, kind, &created);
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.is_already_exists() => {
            let name = object.meta().name.clone().unwrap_or_default();
            if let Some(found) = api.get_opt(&name).await? {
                remember_write(cache, kind, &found);
            }
            Err(kube::Error::Api(status))
        }
        Err(other) => Err(other),
    }
}

fn remember_write<K: Resource + 'static>(cache: &EdgeCache, kind: Cached, object: &K) {
    match (object as &dyn std::any::Any).downcast_ref::<Job>() {
        Some(job) => cache.wrote_job(job),
        None => cache.wrote_object(kind, object),
    }
}

pub async fn delete<K>(client: &Client, deletion: &Deletion) -> Result<(), kube::Error>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), &deletion.namespace);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(deletion.uid.clone()),
            resource_version: None,
        }),
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    let call = || api.delete(&deletion.name, &params);
    match in_namespace::<K, _, _>(client, &deletion.namespace, call).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        Err(error) => Err(error),
    }
}
