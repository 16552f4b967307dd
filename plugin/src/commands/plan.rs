//! `plan NAME [--verify]`.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use providers_shared::{
    api::{Plan, PlanValues, Workspace},
    plan_values::{self, Source},
    seal::Keyring,
};
use serde_json::Value;

use crate::{
    cli::PlanArgs,
    commands::Ctx,
    objects,
    report::{report, user_error},
    views::plan::{plan_detail, verify},
};

pub async fn run(ctx: &Ctx, args: PlanArgs) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let item = objects::get::<Workspace>(client, Some(&ctx.conn.namespace), &args.name).await?;
    let Some(sealed) = item.typed.spec.plan.clone() else {
        return Err(user_error(
            format!("{} has no sealed plan yet", args.name),
            Some(
                "the admission webhook seals it when the Workspace is created; see kubectl provider status"
                    .to_owned(),
            ),
        ));
    };
    let values = values_of(client, &ctx.conn.namespace, &sealed.plan).await;
    let verified = if args.verify {
        let keyring = published_keys(
            client,
            &args.published.keys_namespace,
            &args.published.keys_configmap,
        )
        .await?;
        let refused = |reason: String| {
            user_error(
                format!("plan verification failed: {reason}"),
                Some("do not trust this plan; the installer refuses to run it. Ask the platform team".to_owned()),
            )
        };
        let key = verify(&keyring, &item.typed).map_err(refused)?;
        // The seal covers the values' digest; the values are what that digest names.
        if let Err(reason) = &values {
            return Err(refused(reason.clone()));
        }
        if !ctx.output().is_table() {
            ctx.note(&format!(
                "plan verified: signed by published key {key}, sealed for this Workspace"
            ));
        }
        Some(key)
    } else {
        None
    };
    ctx.print(&plan_detail(&item, &sealed, &values, verified.as_deref()))
}

/// The plan's values: inline in a plan sealed before values were stored apart, otherwise
/// read from the PlanValues object its digest names and checked against that digest,
/// exactly as the installer does before it runs the plan. Or why they cannot be shown.
async fn values_of(client: &Client, namespace: &str, plan: &Plan) -> Result<Value, String> {
    let digest = match plan_values::source_of(plan) {
        Source::Inline(values) => return Ok(values.clone()),
        Source::Stored { digest } => digest,
    };
    let name = plan_values::object_name(&plan.workspace.name, digest);
    let api: Api<PlanValues> = Api::namespaced(client.clone(), namespace);
    match api.get_opt(&name).await {
        Err(error) => Err(format!(
            "cannot read its values (PlanValues {name}): {}",
            report(&error.into(), None).message
        )),
        Ok(None) => Err(format!(
            "its values ({digest}) are not stored: PlanValues {name} is missing"
        )),
        Ok(Some(stored)) => plan_values::decode(&stored.spec, digest)
            .map_err(|defect| format!("its values (PlanValues {name}) {defect}")),
    }
}

/// The public keys the platform publishes: entries `<keyID>.pem` of a ConfigMap.
async fn published_keys(client: &Client, namespace: &str, name: &str) -> anyhow::Result<Keyring> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let map = api.get(name).await.map_err(|e| {
        user_error(
            format!(
                "cannot read the published sealing keys (configmap {name} in namespace {namespace}): {}",
                report(&e.into(), None).message
            ),
            Some("pass --keys-namespace and --keys-configmap if the platform publishes them elsewhere".to_owned()),
        )
    })?;
    let data = map.data.unwrap_or_default();
    let pems: Vec<(&str, &str)> = data
        .iter()
        .filter(|(key, _)| key.ends_with(".pem"))
        .map(|(key, pem)| (key.as_str(), pem.as_str()))
        .collect();
    let configmap = providers_shared::text::object_key(namespace, name);
    if pems.is_empty() {
        return Err(user_error(
            format!("configmap {configmap} holds no public keys (entries named <keyID>.pem)"),
            None,
        ));
    }
    Keyring::from_pems(pems)
        .map_err(|error| user_error(format!("configmap {configmap}: {error}"), None))
}
