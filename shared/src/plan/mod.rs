//! Plan resolution: a Recipe, an Edge and a tenant's intent become the Plan of one attempt.

mod identifiers;
mod names;
mod repository_allowlist;
mod resolve_error;
mod withdrawn;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};

use crate::{
    api::{
        Cause, EdgeSpec, Owner, Plan, PlanValuesSpec, RecipeSpec, WorkspaceIdentity, WorkspaceSpec,
    },
    plan_values, tenant_values,
};

pub use identifiers::{attempt_id, job_name, runtime_credential_secret};
pub use names::{
    DEFAULT_NAMESPACE, DEFAULT_RELEASE, dns_label, dns_subdomain, is_reserved_namespace,
};
pub use repository_allowlist::repository_allowed;
pub use resolve_error::ResolveError;
pub use withdrawn::{Withdrawn, check_retry};

use names::Names;

/// What identifies one attempt, besides the recipe and intent it resolves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptContext {
    pub workspace: WorkspaceIdentity,
    pub owner: Owner,
    pub attempt: i64,
    pub attempt_id: String,
    pub retry: i64,
    /// When the plan is sealed.
    pub sealed_at: Timestamp,
    /// Whether it is sealed for a dry run.
    pub dry_run: bool,
    /// Why it is sealed.
    pub cause: Cause,
    /// For a rollback: the attempt whose plan it seals again.
    pub restores: Option<i64>,
}

/// A new attempt's plan and the values it refers to by digest, in their stored form.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub plan: Plan,
    /// What the PlanValues object named for the plan must hold.
    pub values: PlanValuesSpec,
}

/// Resolves a new attempt from the recipe and the tenant's intent.
pub fn resolve(
    recipe_name: &str,
    recipe: &RecipeSpec,
    edge: &EdgeSpec,
    intent: &WorkspaceSpec,
    context: AttemptContext,
    allowlist: &[String],
) -> Result<Resolved, ResolveError> {
    if !repository_allowed(&recipe.chart.repository, allowlist) {
        return Err(ResolveError::RepositoryNotAllowed {
            recipe: recipe_name.to_owned(),
            repository: recipe.chart.repository.clone(),
        });
    }
    let default = recipe
        .versions
        .first()
        .ok_or_else(|| ResolveError::NoVersions {
            recipe: recipe_name.to_owned(),
        })?;
    let version = match &intent.version {
        None => default.clone(),
        Some(version) if recipe.versions.contains(version) => version.clone(),
        Some(version) => {
            return Err(ResolveError::VersionNotAllowed {
                recipe: recipe_name.to_owned(),
                version: crate::text::quoted(version),
                allowed: recipe.versions.clone(),
                default: default.clone(),
            });
        }
    };
    tenant_values::check(recipe_name, &recipe.values_schema, intent.values.as_ref())?;
    let mut merged = tenant_values::merge(recipe.values.as_ref(), intent.values.as_ref());
    if let Some(credential) = &recipe.runtime_credential {
        let secret = runtime_credential_secret(&context.workspace.name);
        tenant_values::set_path(
            &mut merged,
            &credential.value_path,
            serde_json::Value::String(secret),
        );
    }
    let names = Names {
        recipe: recipe_name,
        org: &context.workspace.namespace,
        workspace: &context.workspace.name,
    };
    let namespace = names.derive(
        "namespace",
        recipe.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE),
    )?;
    let release = names.derive(
        "release name",
        recipe.release.as_deref().unwrap_or(DEFAULT_RELEASE),
    )?;
    if let Some(why) = recipe
        .execution
        .iter()
        .find_map(crate::execution::forbidden)
    {
        return Err(ResolveError::ForbiddenRule {
            recipe: recipe_name.to_owned(),
            why,
        });
    }
    let job = job_name(&context.workspace, &release, context.attempt);
    let stored = plan_values::encode(&merged).map_err(|why| ResolveError::ValuesTooLarge {
        recipe: recipe_name.to_owned(),
        why,
    })?;
    let plan = Plan {
        attempt: context.attempt,
        attempt_id: context.attempt_id,
        retry: context.retry,
        org: context.workspace.namespace.clone(),
        workspace: context.workspace,
        provider: recipe_name.to_owned(),
        owner: context.owner,
        chart: recipe.chart.clone(),
        version,
        release,
        namespace,
        values_digest: Some(stored.digest.clone()),
        values: None,
        edge_name: intent.edge.clone(),
        cluster: edge.cluster_id.clone(),
        edge_workspace_uuid: edge.workspace_uuid.clone(),
        job,
        execution: recipe.execution.clone(),
        runtime_credential: recipe.runtime_credential.clone(),
        drift: recipe.drift.clone(),
        sealed_at: Some(Time(context.sealed_at)),
        dry_run: context.dry_run,
        cause: Some(context.cause),
        restores: context.restores,
    };
    Ok(Resolved {
        plan,
        values: stored,
    })
}

/// A retry, repair or rollback: the original plan, unchanged but for the attempt's
/// identity, its Job, who asked, when, why and whether for a dry run, and the Workspace UID
/// when the original was sealed before one was known.
pub fn retry(original: &Plan, context: AttemptContext) -> Plan {
    Plan {
        attempt: context.attempt,
        attempt_id: context.attempt_id,
        retry: context.retry,
        job: job_name(&context.workspace, &original.release, context.attempt),
        owner: context.owner,
        workspace: context.workspace,
        sealed_at: Some(Time(context.sealed_at)),
        dry_run: context.dry_run,
        cause: Some(context.cause),
        restores: context.restores,
        ..original.clone()
    }
}

#[cfg(test)]
use crate::api::ExecutionRule;

#[cfg(test)]
mod tests;
