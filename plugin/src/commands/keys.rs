//! `keys [-A] [--in-use KEYID]`: the sealing keys of the live plans, and whether a key
//! may be retired.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use providers_shared::api::Workspace;

use crate::{
    cli::KeysArgs,
    commands::Ctx,
    objects,
    report::{report, user_error},
    views::keys::{
        LivePlan, Published, Scope, in_use_list, key_list, key_rows, live_plans, publication,
        retirement,
    },
};

pub async fn run(ctx: &Ctx, args: KeysArgs) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let scope = if args.all_namespaces {
        Scope::All
    } else {
        Scope::Namespace(ctx.conn.namespace.clone())
    };
    let items = objects::list::<Workspace>(client, scope.namespace(), None).await?;
    let workspaces: Vec<Workspace> = items.into_iter().map(|item| item.typed).collect();
    let plans = live_plans(&workspaces);
    let published = published(
        client,
        &args.published.keys_namespace,
        &args.published.keys_configmap,
    )
    .await;
    match &published {
        Published::Read { problems, .. } => {
            for problem in problems {
                ctx.note(&format!("warning: {problem}"));
            }
        }
        Published::Unknown(why) => ctx.note(&format!(
            "warning: whether a key is published is unknown: {why} (pass --keys-namespace and \
             --keys-configmap if the platform publishes them elsewhere)"
        )),
    }
    let Some(key_id) = args.in_use else {
        return ctx.print(&key_list(&key_rows(&plans, &published), &scope));
    };
    let sealed_with: Vec<&LivePlan> = plans.iter().filter(|p| p.key_id == key_id).collect();
    ctx.print(&in_use_list(
        &key_id,
        &sealed_with,
        published.has(&key_id),
        &scope,
    ))?;
    match retirement(&key_id, &sealed_with, &scope) {
        Some((message, hint)) => Err(user_error(message, Some(hint))),
        None => Ok(()),
    }
}

/// The key IDs the keys ConfigMap publishes, or why they are unknown (it is missing, or
/// the caller may not read it).
async fn published(client: &Client, namespace: &str, name: &str) -> Published {
    let configmap = providers_shared::text::object_key(namespace, name);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    match api.get_opt(name).await {
        Ok(Some(map)) => {
            let data = map.data.unwrap_or_default();
            publication(
                &configmap,
                data.iter().map(|(key, pem)| (key.as_str(), pem.as_str())),
            )
        }
        Ok(None) => Published::Unknown(format!("configmap {configmap} does not exist")),
        Err(error) => Published::Unknown(format!(
            "cannot read configmap {configmap}: {}",
            report(&error.into(), None).message
        )),
    }
}
