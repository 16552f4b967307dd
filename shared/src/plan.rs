//! Plan resolution: a Recipe, an Edge and a tenant's intent become the Plan of one attempt.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use sha2::{Digest, Sha256};

use crate::{
    api::{
        Cause, EdgeSpec, ExecutionRule, Owner, Plan, RecipeSpec, WorkspaceIdentity, WorkspaceSpec,
    },
    values::{self, ValueError},
};

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
    #[error("recipe {recipe:?} lists no chart versions; ask the platform team to fix the recipe")]
    NoVersions { recipe: String },
    #[error(
        "recipe {recipe:?} installs from {repository:?}, which is not an allowlisted chart repository; ask the platform team to fix the recipe or the webhook's --allowed-chart-repository"
    )]
    RepositoryNotAllowed { recipe: String, repository: String },
    #[error("{0}")]
    Values(#[from] ValueError),
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
            ResolveError::VersionNotAllowed { .. } => "spec.version".to_owned(),
            ResolveError::NoVersions { .. }
            | ResolveError::RepositoryNotAllowed { .. }
            | ResolveError::ForbiddenRule { .. } => "spec.recipe".to_owned(),
            ResolveError::InvalidName { .. } => "metadata.name".to_owned(),
            ResolveError::Values(error) => error.field(),
        }
    }
}

/// Whether a chart repository URL is under one of the allowlisted prefixes. A prefix
/// matches whole path segments: `https://charts.example/team` allows
/// `https://charts.example/team/stable` but not `https://charts.example/team-evil`.
pub fn repository_allowed(repository: &str, allowlist: &[String]) -> bool {
    allowlist.iter().any(|prefix| {
        let prefix = prefix.trim_end_matches('/');
        !prefix.is_empty()
            && repository
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Resolves a new attempt from the recipe and the tenant's intent.
pub fn resolve(
    recipe_name: &str,
    recipe: &RecipeSpec,
    edge: &EdgeSpec,
    intent: &WorkspaceSpec,
    context: AttemptContext,
    allowlist: &[String],
) -> Result<Plan, ResolveError> {
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
    values::check(recipe_name, &recipe.values_schema, intent.values.as_ref())?;
    let mut merged = values::merge(recipe.values.as_ref(), intent.values.as_ref());
    if let Some(credential) = &recipe.runtime_credential {
        let secret = runtime_credential_secret(&context.workspace.name);
        values::set_path(
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
    Ok(Plan {
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
        values: merged,
        edge_name: intent.edge.clone(),
        cluster: edge.cluster_id.clone(),
        edge_workspace_uuid: edge.workspace_uuid.clone(),
        job,
        execution: recipe.execution.clone(),
        runtime_credential: recipe.runtime_credential.clone(),
        sealed_at: Some(Time(context.sealed_at)),
        dry_run: context.dry_run,
        cause: Some(context.cause),
        restores: context.restores,
    })
}

/// The namespace a Recipe installs into when it names none: one per organization.
pub const DEFAULT_NAMESPACE: &str = "{org}-{recipe}";
/// The release name a Recipe uses when it names none.
pub const DEFAULT_RELEASE: &str = "{recipe}";

/// What a Recipe's namespace and release templates are filled from.
struct Names<'a> {
    recipe: &'a str,
    org: &'a str,
    workspace: &'a str,
}

impl Names<'_> {
    /// `template` with its placeholders replaced, checked as a namespace (a DNS label) or a
    /// Helm release name (at most 53 characters, a DNS subdomain).
    fn derive(&self, what: &'static str, template: &str) -> Result<String, ResolveError> {
        let resolved = template
            .replace("{org}", self.org)
            .replace("{workspace}", self.workspace)
            .replace("{recipe}", self.recipe);
        let why = if resolved.contains(['{', '}']) {
            Some("it names a placeholder other than {org}, {workspace} and {recipe}".to_owned())
        } else if what == "namespace"
            && template.contains("{workspace}")
            && !template.contains("{org}")
        {
            // Workspace names are the tenants' to choose: without the organization in it, a
            // tenant could name a Workspace after another organization's namespace.
            Some("the template names {workspace} without {org}, so a tenant could claim another organization's namespace".to_owned())
        } else if what == "namespace" && is_reserved_namespace(&resolved) {
            Some("the name is reserved for the cluster (default, kube-*, providers-*)".to_owned())
        } else if what == "namespace" {
            dns_label(&resolved, 63).err()
        } else {
            dns_subdomain(&resolved, 53).err()
        };
        match why {
            None => Ok(resolved),
            Some(why) => Err(ResolveError::InvalidName {
                recipe: self.recipe.to_owned(),
                what,
                template: template.to_owned(),
                resolved: crate::text::quoted(&resolved),
                why,
            }),
        }
    }
}

/// Namespaces no Workspace installs into, whatever a template derives: the cluster's own
/// and the platform's.
pub fn is_reserved_namespace(name: &str) -> bool {
    name == "default" || name.starts_with("kube-") || name.starts_with("providers-")
}

/// Whether `name` is a DNS label of at most `max` characters (RFC 1123): what a namespace
/// must be.
pub fn dns_label(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() || name.len() > max {
        return Err(format!(
            "it must be 1 to {max} characters long, not {}",
            name.len()
        ));
    }
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !name.chars().all(|c| alphanumeric(c) || c == '-') {
        return Err("only lowercase letters, digits and '-' are allowed".to_owned());
    }
    if !name.starts_with(alphanumeric) || !name.ends_with(alphanumeric) {
        return Err("it must start and end with a letter or digit".to_owned());
    }
    Ok(())
}

/// Whether `name` is dot-separated DNS labels, at most `max` characters in all: what a Helm
/// release name must be.
pub fn dns_subdomain(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() || name.len() > max {
        return Err(format!(
            "it must be 1 to {max} characters long, not {}",
            name.len()
        ));
    }
    name.split('.').try_for_each(|label| dns_label(label, 63))
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

/// The attempt ID: a digest of everything that starts the attempt - the Workspace, the
/// attempt number, the stored object's resourceVersion the write applies to (empty on
/// create), the tenant's intent and who asked. The mutating webhook is therefore
/// deterministic (it may be called twice for one request), and the validating webhook can
/// recompute it: a plan sealed for any other request (a dry run, an earlier state, another
/// user) does not match.
pub fn attempt_id(
    workspace: &WorkspaceIdentity,
    attempt: i64,
    old_resource_version: &str,
    intent: &WorkspaceSpec,
    user: &str,
) -> String {
    let intent = serde_json::json!({
        "recipe": intent.recipe,
        "edge": intent.edge,
        "version": intent.version,
        "values": intent.values,
        "retry": intent.retry.unwrap_or(0),
    });
    let digest = Sha256::new()
        .chain_update(workspace.namespace.as_bytes())
        .chain_update([0])
        .chain_update(workspace.name.as_bytes())
        .chain_update([0])
        .chain_update(attempt.to_be_bytes())
        .chain_update(old_resource_version.as_bytes())
        .chain_update([0])
        .chain_update(crate::canonical::to_vec(&intent))
        .chain_update([0])
        .chain_update(user.as_bytes())
        .finalize();
    hex::encode(&digest[..12])
}

/// The Job's name on the edge: deterministic, so a restarted installer finds the Job it
/// made instead of making a second one. At most 63 characters (a Job name becomes a label).
pub fn job_name(workspace: &WorkspaceIdentity, release: &str, attempt: i64) -> String {
    let digest = Sha256::new()
        .chain_update(workspace.namespace.as_bytes())
        .chain_update([0])
        .chain_update(workspace.name.as_bytes())
        .finalize();
    let suffix = format!("-{}-{attempt}", &hex::encode(digest)[..8]);
    let head: String = release.chars().take(63 - suffix.len()).collect();
    format!("{}{suffix}", head.trim_end_matches('-'))
}

/// The Secret on the edge that carries the provider's hub credential.
pub fn runtime_credential_secret(workspace_name: &str) -> String {
    let head: String = workspace_name.chars().take(40).collect();
    format!("{head}-hub-credential")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{api::RuntimeCredential, testing};
    use serde_json::json;

    pub(crate) fn recipe() -> RecipeSpec {
        RecipeSpec {
            values: Some(json!({"replicaCount": 1, "image": {"tag": "v1"}})),
            values_schema: vec![testing::replica_count()],
            runtime_credential: Some(RuntimeCredential {
                role: "provider".into(),
                value_path: "hub.secretName".into(),
            }),
            ..testing::recipe_spec()
        }
    }

    /// The cluster and workspace the plan's assertions name.
    fn edge() -> EdgeSpec {
        EdgeSpec {
            cluster_id: "cluster-1".into(),
            workspace_uuid: "uuid-1".into(),
            ..testing::edge_spec("edge-1")
        }
    }

    fn intent(version: Option<&str>, values: Option<serde_json::Value>) -> WorkspaceSpec {
        WorkspaceSpec {
            recipe: "demo".into(),
            edge: "edge-1".into(),
            version: version.map(Into::into),
            values,
            retry: None,
            plan: None,
        }
    }

    fn context(attempt: i64) -> AttemptContext {
        let workspace = WorkspaceIdentity {
            namespace: "org-a".into(),
            name: "ws".into(),
            uid: String::new(),
        };
        AttemptContext {
            attempt_id: attempt_id(&workspace, attempt, "", &intent(None, None), "alice"),
            workspace,
            owner: Owner {
                username: "alice".into(),
                ..Default::default()
            },
            attempt,
            retry: 0,
            sealed_at: Timestamp::UNIX_EPOCH,
            dry_run: false,
            cause: Cause::Create,
            restores: None,
        }
    }

    const ALLOW: &[&str] = &["https://charts.example/stable"];

    fn allow() -> Vec<String> {
        ALLOW.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn resolves_defaults_and_tenant_values() {
        let plan = resolve(
            "demo",
            &recipe(),
            &edge(),
            &intent(None, Some(json!({"replicaCount": 3}))),
            context(1),
            &allow(),
        )
        .unwrap();
        assert_eq!(plan.version, "1.2.0");
        assert_eq!(
            plan.values,
            json!({"replicaCount": 3, "image": {"tag": "v1"}, "hub": {"secretName": "ws-hub-credential"}})
        );
        assert_eq!(
            (
                plan.org.as_str(),
                plan.provider.as_str(),
                plan.cluster.as_str()
            ),
            ("org-a", "demo", "cluster-1")
        );
        assert_eq!(plan.edge_workspace_uuid, "uuid-1");
        assert!(plan.job.starts_with("demo-") && plan.job.ends_with("-1") && plan.job.len() <= 63);
    }

    #[test]
    fn refuses_a_recipe_that_grants_the_runner_its_own_namespace() {
        let mut recipe = recipe();
        recipe.execution = vec![ExecutionRule {
            api_groups: vec![String::new()],
            resources: vec!["namespaces".into()],
            verbs: vec!["patch".into()],
        }];
        let error = resolve(
            "demo",
            &recipe,
            &edge(),
            &intent(None, None),
            context(1),
            &allow(),
        )
        .unwrap_err();
        assert!(
            matches!(error, ResolveError::ForbiddenRule { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("\"namespaces\""), "{error}");
        assert_eq!(error.field(), "spec.recipe");
    }

    #[test]
    fn a_namespace_template_keeps_tenants_inside_their_organization() {
        let derive = |template: &str, workspace: &str| {
            let mut recipe = recipe();
            recipe.namespace = Some(template.into());
            let mut context = context(1);
            context.workspace.name = workspace.into();
            resolve(
                "demo",
                &recipe,
                &edge(),
                &intent(None, None),
                context,
                &allow(),
            )
            .map(|plan| plan.namespace)
        };
        assert_eq!(derive("{org}-{workspace}", "web").unwrap(), "org-a-web");
        let error = derive("{workspace}", "org-b-hello").unwrap_err();
        assert!(error.to_string().contains("without {org}"), "{error}");
        for reserved in ["kube-system", "default", "providers-system"] {
            let error = derive("{workspace}-x", reserved).unwrap_err();
            assert!(error.to_string().contains("without {org}"), "{error}");
            let error = derive(reserved, "web").unwrap_err();
            assert!(error.to_string().contains("reserved"), "{error}");
        }
    }

    #[test]
    fn refuses_versions_the_recipe_does_not_offer() {
        let error = resolve(
            "demo",
            &recipe(),
            &edge(),
            &intent(Some("9.9.9"), None),
            context(1),
            &allow(),
        )
        .unwrap_err();
        assert_eq!(error.field(), "spec.version");
        assert!(error.to_string().contains("\"9.9.9\""));
    }

    #[test]
    fn refuses_repositories_off_the_allowlist() {
        let error = resolve(
            "demo",
            &recipe(),
            &edge(),
            &intent(None, None),
            context(1),
            &[],
        )
        .unwrap_err();
        assert!(matches!(error, ResolveError::RepositoryNotAllowed { .. }));
        assert!(repository_allowed(
            "https://charts.example/stable/x",
            &allow()
        ));
        assert!(!repository_allowed(
            "https://charts.example/stable-evil",
            &allow()
        ));
        assert!(!repository_allowed("https://charts.example", &allow()));
    }

    #[test]
    fn retry_keeps_everything_but_the_attempt() {
        let original = resolve(
            "demo",
            &recipe(),
            &edge(),
            &intent(Some("1.1.0"), None),
            context(1),
            &allow(),
        )
        .unwrap();
        let retried = retry(&original, context(2));
        assert_eq!(retried.attempt, 2);
        assert_ne!(retried.attempt_id, original.attempt_id);
        assert_ne!(retried.job, original.job);
        assert_eq!(
            (&retried.chart, &retried.version, &retried.values),
            (&original.chart, &original.version, &original.values)
        );
    }

    #[test]
    fn a_plan_pinned_to_a_reserved_namespace_is_not_run_again() {
        let mut original = resolve(
            "demo",
            &recipe(),
            &edge(),
            &intent(Some("1.1.0"), None),
            context(1),
            &allow(),
        )
        .unwrap();
        assert_eq!(check_retry(&original, &recipe(), &edge(), &allow()), Ok(()));
        original.namespace = "kube-system".into();
        assert!(matches!(
            check_retry(&original, &recipe(), &edge(), &allow()),
            Err(Withdrawn::Namespace { .. })
        ));
    }

    #[test]
    fn the_default_namespace_is_per_organization() {
        let mut per_org = recipe();
        per_org.namespace = None;
        per_org.release = None;
        let plan = |org: &str| {
            let mut context = context(1);
            context.workspace.namespace = org.into();
            resolve(
                "demo",
                &per_org,
                &edge(),
                &intent(None, None),
                context,
                &allow(),
            )
            .unwrap()
        };
        let (a, b) = (plan("org-a"), plan("org-b"));
        assert_eq!(
            (a.namespace.as_str(), a.release.as_str()),
            ("org-a-demo", "demo")
        );
        assert_eq!(b.namespace, "org-b-demo");
    }

    #[test]
    fn templates_are_filled_and_checked() {
        let mut templated = recipe();
        templated.namespace = Some("{org}-{workspace}-mon".into());
        templated.release = Some("mon-{workspace}".into());
        let plan = resolve(
            "demo",
            &templated,
            &edge(),
            &intent(None, None),
            context(1),
            &allow(),
        )
        .unwrap();
        assert_eq!(
            (plan.namespace.as_str(), plan.release.as_str()),
            ("org-a-ws-mon", "mon-ws")
        );
        for (namespace, release, text) in [
            (
                "{org}-{nope}".to_owned(),
                "r".to_owned(),
                "placeholder other than",
            ),
            ("x".repeat(70), "r".to_owned(), "1 to 63 characters"),
            ("{org}".to_owned(), "r".repeat(54), "1 to 53 characters"),
            ("Upper".to_owned(), "r".to_owned(), "only lowercase"),
        ] {
            let mut bad = recipe();
            bad.namespace = Some(namespace);
            bad.release = Some(release);
            let error = resolve(
                "demo",
                &bad,
                &edge(),
                &intent(None, None),
                context(1),
                &allow(),
            )
            .unwrap_err();
            assert!(matches!(error, ResolveError::InvalidName { .. }), "{error}");
            assert!(error.to_string().contains(text), "{error}");
        }
    }

    #[test]
    fn job_names_fit_in_a_label() {
        let workspace = WorkspaceIdentity {
            namespace: "n".into(),
            name: "w".into(),
            uid: String::new(),
        };
        let name = job_name(&workspace, &"r".repeat(100), 12345);
        assert!(name.len() <= 63, "{name}");
    }
}
