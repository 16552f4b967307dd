//! Whether a sealed plan may run again: what the platform withdrew since it was sealed.

use crate::api::{EdgeSpec, ExecutionRule, Plan, RecipeSpec};

use super::{names::is_reserved_namespace, repository_allowlist::repository_allowed};

/// What the platform withdrew since a plan was sealed, so that it may not run again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Withdrawn {
    #[error("recipe {recipe:?} no longer offers version {version:?} (it offers {offered:?})")]
    Version {
        recipe: String,
        version: String,
        offered: Vec<String>,
    },
    #[error(
        "chart repository {repository:?} is no longer on the platform's allowlist of chart repositories"
    )]
    Repository { repository: String },
    #[error(
        "the runner's rights pinned by the plan ({rule}) are no longer within what recipe {recipe:?} grants"
    )]
    Execution { recipe: String, rule: String },
    #[error(
        "edge {edge:?} is now cluster {cluster:?} of edge workspace {workspace_uuid:?}, not the cluster the plan was sealed for"
    )]
    Edge {
        edge: String,
        cluster: String,
        workspace_uuid: String,
    },
    #[error(
        "the release namespace {namespace:?} pinned by the plan is reserved for the cluster (default, kube-*, providers-*)"
    )]
    Namespace { namespace: String },
}

/// Whether a sealed plan may run again under today's Recipe and Edge: the version is still
/// offered, the chart repository still allowed, the runner's rights still within the
/// Recipe's, and the edge still the same cluster.
pub fn check_retry(
    original: &Plan,
    recipe: &RecipeSpec,
    edge: &EdgeSpec,
    allowlist: &[String],
) -> Result<(), Withdrawn> {
    if !recipe.versions.contains(&original.version) {
        return Err(Withdrawn::Version {
            recipe: original.provider.clone(),
            version: original.version.clone(),
            offered: recipe.versions.clone(),
        });
    }
    if !repository_allowed(&original.chart.repository, allowlist) {
        return Err(Withdrawn::Repository {
            repository: original.chart.repository.clone(),
        });
    }
    if let Some(rule) = original.execution.iter().find(|pinned| {
        crate::execution::forbidden(pinned).is_some()
            || !recipe.execution.iter().any(|rule| covers(rule, pinned))
    }) {
        return Err(Withdrawn::Execution {
            recipe: original.provider.clone(),
            rule: format!(
                "{:?} on {:?} in groups {:?}",
                rule.verbs, rule.resources, rule.api_groups
            ),
        });
    }
    // A plan sealed before reserved namespaces were refused never runs again.
    if is_reserved_namespace(&original.namespace) {
        return Err(Withdrawn::Namespace {
            namespace: original.namespace.clone(),
        });
    }
    if edge.cluster_id != original.cluster || edge.workspace_uuid != original.edge_workspace_uuid {
        return Err(Withdrawn::Edge {
            edge: original.edge_name.clone(),
            cluster: edge.cluster_id.clone(),
            workspace_uuid: edge.workspace_uuid.clone(),
        });
    }
    Ok(())
}

/// Whether `rule` grants everything `pinned` grants (`*` covers anything).
fn covers(rule: &ExecutionRule, pinned: &ExecutionRule) -> bool {
    let within = |granted: &[String], wanted: &[String]| {
        granted.iter().any(|g| g == "*") || wanted.iter().all(|w| granted.contains(w))
    };
    within(&rule.api_groups, &pinned.api_groups)
        && within(&rule.resources, &pinned.resources)
        && within(&rule.verbs, &pinned.verbs)
}
