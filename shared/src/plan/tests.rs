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

/// [`super::resolve`], with the values its plan refers to by digest read back (and checked
/// against that digest) into the plan, so that the assertions below read what runs.
fn resolve(
    recipe_name: &str,
    recipe: &RecipeSpec,
    edge: &EdgeSpec,
    intent: &WorkspaceSpec,
    context: AttemptContext,
    allowlist: &[String],
) -> Result<Plan, ResolveError> {
    super::resolve(recipe_name, recipe, edge, intent, context, allowlist).map(|resolved| {
        let digest = resolved
            .plan
            .values_digest
            .clone()
            .expect("a values digest");
        let values = crate::plan_values::decode(&resolved.values, &digest).unwrap();
        Plan {
            values: Some(values),
            values_digest: None,
            ..resolved.plan
        }
    })
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
        Some(
            json!({"replicaCount": 3, "image": {"tag": "v1"}, "hub": {"secretName": "ws-hub-credential"}})
        )
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
