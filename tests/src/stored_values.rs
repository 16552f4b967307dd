//! The values a sealed plan refers to by digest, read back from the hub as the installer
//! reads them: the PlanValues object its digest names, checked against that digest.

use anyhow::Context as _;
use kube::{Api, Client};
use providers_shared::{
    api::{Plan, PlanValues},
    plan_values::{self, Source},
};
use serde_json::Value;

/// The plan's values: checked against its digest, or inline in an older plan.
pub async fn values_of(client: &Client, plan: &Plan) -> anyhow::Result<Value> {
    let digest = match plan_values::source_of(plan) {
        Source::Inline(values) => return Ok(values.clone()),
        Source::Stored { digest } => digest,
    };
    let name = plan_values::object_name(&plan.workspace.name, digest);
    let stored = Api::<PlanValues>::namespaced(client.clone(), &plan.workspace.namespace)
        .get(&name)
        .await
        .with_context(|| format!("PlanValues {name}"))?;
    Ok(plan_values::decode(&stored.spec, digest)?)
}
