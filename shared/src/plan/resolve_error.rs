//! Why a recipe and intent do not resolve into a plan.

use crate::{plan_values::ValuesTooLarge, tenant_values::ValueError};

/// Why a recipe and intent do not resolve into a plan. The Display text is what a user sees.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "spec.version: recipe {recipe:?} does not offer version {version}; choose one of {allowed:?} or leave spec.version out for {default:?}"
    )]
    VersionNotAllowed {
        recipe: String,
        version: String,
        allowed: Vec<String>,
        default: String,
    },
    #[error(
        "spec.version: a chart version is at most {max} bytes, this one has {length}; choose a version the Recipe offers (kubectl provider recipes) or leave spec.version out for its default"
    )]
    VersionTooLong { length: usize, max: usize },
    #[error("recipe {recipe:?} lists no chart versions; ask the platform team to fix the recipe")]
    NoVersions { recipe: String },
    #[error(
        "recipe {recipe:?} installs from {repository:?}, which is not an allowlisted chart repository; ask the platform team to fix the recipe or the webhook's --allowed-chart-repository"
    )]
    RepositoryNotAllowed { recipe: String, repository: String },
    #[error("{0}")]
    Values(#[from] ValueError),
    #[error("recipe {recipe:?}: {why}")]
    ValuesTooLarge { recipe: String, why: ValuesTooLarge },
    #[error(
        "recipe {recipe:?} grants the runner a rule the installer never grants ({why}); ask the platform team to fix the recipe's spec.execution"
    )]
    ForbiddenRule { recipe: String, why: String },
    #[error(
        "recipe {recipe:?} derives the {what} {resolved} for this Workspace, which cannot be used: {why}; choose another Workspace name, or ask the platform team to change the recipe's {what} template {template:?}"
    )]
    InvalidName {
        recipe: String,
        what: &'static str,
        template: String,
        resolved: String,
        why: String,
    },
}

impl ResolveError {
    /// The field the error is about.
    pub fn field(&self) -> String {
        match self {
            ResolveError::VersionNotAllowed { .. } | ResolveError::VersionTooLong { .. } => {
                "spec.version".to_owned()
            }
            ResolveError::NoVersions { .. }
            | ResolveError::RepositoryNotAllowed { .. }
            | ResolveError::ValuesTooLarge { .. }
            | ResolveError::ForbiddenRule { .. } => "spec.recipe".to_owned(),
            ResolveError::InvalidName { .. } => "metadata.name".to_owned(),
            ResolveError::Values(error) => error.field(),
        }
    }
}
