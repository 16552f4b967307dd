//! `kubectl-provider __complete WORDS...`, which `kubectl_complete-provider` runs for
//! kubectl: the candidates for the last word, with names read from the cluster (Workspaces
//! in the namespace the words choose, Recipes, Edges, namespaces) or from the kubeconfig
//! (contexts, clusters, users). A lookup that fails offers nothing: Tab must never print
//! errors into the user's command line.

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ApiResource, DynamicObject, ListParams},
    config::Kubeconfig,
};
use providers_shared::{
    api::{Edge, Recipe, Workspace},
    organization::ORGANIZATION_LABEL,
};

use crate::{
    cli::GlobalFlags,
    completion::{LOOKUP_TIMEOUT, Lookup, plan},
    connect::connect,
};

/// The lines to print: candidates, then `:<directive>`.
pub async fn run(words: &[String]) -> Vec<String> {
    let (plan, flags) = plan(words);
    let names = match plan.lookup {
        Some(lookup) => names(lookup, flags).await.unwrap_or_default(),
        None => Vec::new(),
    };
    plan.lines(&names)
}

async fn names(lookup: Lookup, mut flags: GlobalFlags) -> anyhow::Result<Vec<String>> {
    match lookup {
        Lookup::Contexts | Lookup::Clusters | Lookup::Users => {
            let kubeconfig = match &flags.kubeconfig {
                Some(path) => Kubeconfig::read_from(path)?,
                None => Kubeconfig::read()?,
            };
            Ok(match lookup {
                Lookup::Contexts => kubeconfig.contexts.into_iter().map(|c| c.name).collect(),
                Lookup::Clusters => kubeconfig.clusters.into_iter().map(|c| c.name).collect(),
                _ => kubeconfig.auth_infos.into_iter().map(|u| u.name).collect(),
            })
        }
        _ => {
            flags.request_timeout = flags.request_timeout.or(Some(LOOKUP_TIMEOUT));
            let conn = connect(&flags).await?;
            let client = &conn.client;
            match lookup {
                Lookup::Workspaces => {
                    names_of::<Workspace>(client, Some(&conn.namespace), None).await
                }
                Lookup::Recipes => names_of::<Recipe>(client, None, None).await,
                Lookup::Edges => names_of::<Edge>(client, None, None).await,
                Lookup::Namespaces => names_of::<Namespace>(client, None, None).await,
                _ => {
                    let organizations = format!("{ORGANIZATION_LABEL}=true");
                    names_of::<Namespace>(client, None, Some(&organizations)).await
                }
            }
        }
    }
}

/// The names of the objects of kind `K`, read as metadata only.
async fn names_of<K: Resource<DynamicType = ()>>(
    client: &Client,
    namespace: Option<&str>,
    labels: Option<&str>,
) -> anyhow::Result<Vec<String>> {
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let mut params = ListParams::default();
    if let Some(labels) = labels {
        params = params.labels(labels);
    }
    let mut names: Vec<String> = api
        .list_metadata(&params)
        .await?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    Ok(names)
}
