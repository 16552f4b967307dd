//! Table-driven tests of the admission rules, one case per rule.

use k8s_openapi::api::authentication::v1::UserInfo;
use kube::api::ObjectMeta;
use serde_json::json;

use super::{
    Denial, Operation, Request,
    mutate::{Lookups, PlanAction, StartKind, plan_action, seal_attempt},
    validate::validate,
};
use crate::{
    api::{
        ChartRef, EdgeSpec, JobResult, RecipeSpec, SecretKeyRef, ValueField, ValueType, Workspace,
        WorkspaceSpec, WorkspaceStatus,
    },
    seal::{Keyring, Sealer},
};

fn sealer() -> Sealer {
    Sealer::from_seed([7; 32])
}

fn recipe(chart: &str) -> RecipeSpec {
    RecipeSpec {
        chart: ChartRef {
            repository: "https://charts.example/stable".into(),
            name: chart.into(),
        },
        versions: vec!["1.2.0".into(), "1.1.0".into()],
        namespace: "demo".into(),
        release: "demo".into(),
        values: Some(json!({"replicaCount": 1})),
        values_schema: vec![ValueField {
            path: "replicaCount".into(),
            type_: ValueType::Integer,
            description: None,
            enum_: None,
            pattern: None,
            max_length: None,
            minimum: Some(1.0),
            maximum: Some(5.0),
        }],
        execution: vec![],
        runtime_credential: None,
    }
}

fn edge() -> EdgeSpec {
    EdgeSpec {
        cluster_id: "c1".into(),
        workspace_uuid: "u1".into(),
        kubeconfig_secret_ref: SecretKeyRef {
            namespace: "p".into(),
            name: "e".into(),
            key: "kubeconfig".into(),
        },
    }
}

fn alice() -> UserInfo {
    UserInfo {
        username: Some("alice".into()),
        uid: Some("uid-alice".into()),
        ..Default::default()
    }
}

fn allow() -> Vec<String> {
    vec!["https://charts.example".into()]
}

fn workspace(values: serde_json::Value) -> Workspace {
    let mut ws = Workspace::new(
        "ws",
        WorkspaceSpec {
            recipe: "demo".into(),
            edge: "edge-1".into(),
            version: None,
            values: Some(values),
            retry: None,
            plan: None,
        },
    );
    ws.metadata = ObjectMeta {
        name: Some("ws".into()),
        namespace: Some("org-a".into()),
        ..Default::default()
    };
    ws
}

/// Runs the mutating decision end to end, as the webhook does, with every lookup found
/// and the user authorized. Returns the object as the API server would store it.
fn admit(
    operation: Operation,
    object: &Workspace,
    old: Option<&Workspace>,
) -> Result<Workspace, Denial> {
    let user = alice();
    let request = Request {
        operation,
        user: &user,
        object,
        old,
    };
    let mut result = object.clone();
    match plan_action(&request)? {
        PlanAction::Keep => {}
        PlanAction::Restore(plan) => result.spec.plan = Some(*plan),
        PlanAction::Start(start) => {
            let recipe = recipe("demo");
            let edge = edge();
            let lookups = Lookups {
                recipe: Some(&recipe),
                edge: Some(&edge),
                authorized: Ok(true),
            };
            result.spec.plan = Some(seal_attempt(
                &request,
                &start,
                lookups,
                &sealer(),
                &allow(),
            )?);
        }
    }
    let request = Request {
        operation,
        user: &user,
        object: &result,
        old,
    };
    validate(&request, &Keyring::from(&sealer()))?;
    result.metadata.uid.get_or_insert_with(|| "uid-ws-1".into());
    // Every stored write gets a new resourceVersion, as in the API server.
    static VERSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let version = VERSION.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    result.metadata.resource_version = Some(version.to_string());
    Ok(result)
}

fn with_result(mut ws: Workspace, result: Option<JobResult>) -> Workspace {
    let attempt = ws.spec.plan.as_ref().map(|p| p.plan.attempt);
    ws.status = Some(WorkspaceStatus {
        attempt,
        job_result: result,
        ..Default::default()
    });
    ws
}

fn created() -> Workspace {
    admit(
        Operation::Create,
        &workspace(json!({"replicaCount": 2})),
        None,
    )
    .expect("create is admitted")
}

#[test]
fn create_seals_attempt_one_with_merged_values() {
    let ws = created();
    let plan = &ws.spec.plan.as_ref().unwrap().plan;
    assert_eq!((plan.attempt, plan.version.as_str()), (1, "1.2.0"));
    assert_eq!(plan.values, json!({"replicaCount": 2}));
    assert_eq!(plan.owner.username, "alice");
    assert_eq!(
        (plan.org.as_str(), plan.workspace.name.as_str()),
        ("org-a", "ws")
    );
    Keyring::from(&sealer())
        .verify(ws.spec.plan.as_ref().unwrap())
        .unwrap();
}

#[test]
fn the_same_request_twice_gives_the_same_plan() {
    let object = workspace(json!({}));
    let a = admit(Operation::Create, &object, None).unwrap();
    let b = admit(Operation::Create, &object, None).unwrap();
    assert_eq!(a.spec.plan, b.spec.plan);
    // Another intent is another attempt.
    let c = admit(
        Operation::Create,
        &workspace(json!({"replicaCount": 3})),
        None,
    )
    .unwrap();
    assert_ne!(
        a.spec.plan.unwrap().plan.attempt_id,
        c.spec.plan.unwrap().plan.attempt_id
    );
}

#[test]
fn a_plan_written_on_create_is_denied() {
    let mut object = workspace(json!({}));
    object.spec.plan = created().spec.plan;
    assert_eq!(
        admit(Operation::Create, &object, None),
        Err(Denial::PlanSetOnCreate)
    );
}

#[test]
fn pinned_fields_cannot_change_during_an_active_attempt() {
    let old = created();
    type Edit = fn(&mut WorkspaceSpec);
    let edits: [(&str, Edit); 4] = [
        ("recipe", |s| s.recipe = "other".into()),
        ("edge", |s| s.edge = "edge-2".into()),
        ("version", |s| s.version = Some("1.1.0".into())),
        ("values", |s| s.values = Some(json!({"replicaCount": 3}))),
    ];
    for (field, edit) in edits {
        let mut new = old.clone();
        edit(&mut new.spec);
        let denial = admit(Operation::Update, &new, Some(&old)).unwrap_err();
        assert_eq!(denial.field(), format!("spec.{field}"));
        assert!(
            matches!(denial, Denial::EditForbidden { attempt: 1, .. }),
            "{denial}"
        );
        assert!(denial.to_string().contains("attempt 1"), "{denial}");
    }
}

#[test]
fn labels_can_change_during_an_active_attempt_and_the_plan_stays() {
    let old = created();
    let mut new = old.clone();
    new.metadata.labels = Some([("team".to_owned(), "x".to_owned())].into());
    assert_eq!(
        admit(Operation::Update, &new, Some(&old))
            .unwrap()
            .spec
            .plan,
        old.spec.plan
    );
}

#[test]
fn an_omitted_plan_is_restored() {
    let old = created();
    let mut new = old.clone();
    new.spec.plan = None;
    assert_eq!(
        admit(Operation::Update, &new, Some(&old))
            .unwrap()
            .spec
            .plan,
        old.spec.plan
    );
}

#[test]
fn a_tampered_plan_is_denied() {
    let old = created();
    let mut new = old.clone();
    let plan = new.spec.plan.as_mut().unwrap();
    plan.plan.chart.name = "evil".into();
    assert_eq!(
        admit(Operation::Update, &new, Some(&old)),
        Err(Denial::PlanChanged { attempt: 1 })
    );
    let mut new = with_result(old.clone(), Some(JobResult::Failed));
    let mut forged = new.spec.plan.clone().unwrap();
    forged.plan.attempt = 2;
    new.spec.plan = Some(forged);
    let old = with_result(old, Some(JobResult::Failed));
    assert!(matches!(
        admit(Operation::Update, &new, Some(&old)),
        Err(Denial::SealInvalid(_))
    ));
}

#[test]
fn a_plan_of_another_workspace_is_denied() {
    let other = admit(Operation::Create, &workspace(json!({})), None).unwrap();
    let old = with_result(created(), Some(JobResult::Failed));
    let mut new = old.clone();
    let mut copied = other.spec.plan.unwrap();
    copied.plan.workspace.name = "other".into();
    let copied = sealer().seal(copied.plan).unwrap();
    let mut copied2 = copied.clone();
    copied2.plan.attempt = 2;
    new.spec.plan = Some(sealer().seal(copied2.plan).unwrap());
    assert!(matches!(
        admit(Operation::Update, &new, Some(&old)),
        Err(Denial::PlanForOtherWorkspace { .. })
    ));
}

#[test]
fn a_plan_sealed_for_another_request_is_a_replay() {
    let failed = with_result(created(), Some(JobResult::Failed));
    let mut retry = failed.clone();
    retry.spec.retry = Some(1);
    let dry_run = admit(Operation::Update, &retry, Some(&failed)).unwrap();
    // Replayed where no attempt starts: refused.
    let mut replay = failed.clone();
    replay.spec.plan = dry_run.spec.plan.clone();
    assert_eq!(
        admit(Operation::Update, &replay, Some(&failed)),
        Err(Denial::PlanNotForThisRequest { attempt: 2 })
    );
    // Replayed where an attempt starts, after the object changed: the webhook seals afresh.
    let mut relabelled = failed.clone();
    relabelled.metadata.resource_version = Some("changed".into());
    let mut replay = relabelled.clone();
    replay.spec.retry = Some(1);
    replay.spec.plan = dry_run.spec.plan.clone();
    let admitted = admit(Operation::Update, &replay, Some(&relabelled)).unwrap();
    assert_ne!(
        admitted.spec.plan.unwrap().plan.attempt_id,
        dry_run.spec.plan.unwrap().plan.attempt_id
    );
}

#[test]
fn a_retry_after_failure_reuses_the_original_plan() {
    let failed = with_result(created(), Some(JobResult::Failed));
    let mut new = failed.clone();
    new.spec.retry = Some(1);
    let user = alice();
    let request = Request {
        operation: Operation::Update,
        user: &user,
        object: &new,
        old: Some(&failed),
    };
    let PlanAction::Start(start) = plan_action(&request).unwrap() else {
        panic!("a retry starts an attempt")
    };
    assert!(matches!(start.kind, StartKind::Retry { .. }));
    // The platform changed the recipe in between: the retry does not see it.
    let changed = recipe("changed-chart");
    let lookups = Lookups {
        recipe: Some(&changed),
        edge: None,
        authorized: Ok(true),
    };
    let sealed = seal_attempt(&request, &start, lookups, &sealer(), &allow()).unwrap();
    let original = &failed.spec.plan.as_ref().unwrap().plan;
    assert_eq!(sealed.plan.attempt, 2);
    assert_eq!(
        (
            &sealed.plan.chart,
            &sealed.plan.version,
            &sealed.plan.values
        ),
        (&original.chart, &original.version, &original.values)
    );
    assert_ne!(sealed.plan.attempt_id, original.attempt_id);
}

#[test]
fn a_retry_during_an_active_attempt_is_denied() {
    let old = created();
    let mut new = old.clone();
    new.spec.retry = Some(1);
    assert_eq!(
        admit(Operation::Update, &new, Some(&old)),
        Err(Denial::RetryWhileActive { attempt: 1 })
    );
}

#[test]
fn a_retry_after_success_starts_nothing() {
    let old = with_result(created(), Some(JobResult::Succeeded));
    let mut new = old.clone();
    new.spec.retry = Some(1);
    assert_eq!(
        admit(Operation::Update, &new, Some(&old))
            .unwrap()
            .spec
            .plan,
        old.spec.plan
    );
}

#[test]
fn changed_intent_after_a_terminal_attempt_seals_the_new_intent() {
    for result in [JobResult::Succeeded, JobResult::Failed] {
        let old = with_result(created(), Some(result));
        let mut new = old.clone();
        new.spec.values = Some(json!({"replicaCount": 4}));
        new.spec.version = Some("1.1.0".into());
        let plan = admit(Operation::Update, &new, Some(&old))
            .unwrap()
            .spec
            .plan
            .unwrap()
            .plan;
        assert_eq!((plan.attempt, plan.version.as_str()), (2, "1.1.0"));
        assert_eq!(plan.values, json!({"replicaCount": 4}));
        assert_eq!(
            plan.workspace.uid, "uid-ws-1",
            "later attempts bind the Workspace UID"
        );
    }
}

#[test]
fn no_new_attempt_while_deletion_is_fenced() {
    let mut old = with_result(created(), Some(JobResult::Failed));
    old.status.as_mut().unwrap().deleting = true;
    let mut retry = old.clone();
    retry.spec.retry = Some(1);
    assert!(matches!(
        admit(Operation::Update, &retry, Some(&old)),
        Err(Denial::Fenced { .. })
    ));
    let mut upgrade = old.clone();
    upgrade.spec.values = Some(json!({"replicaCount": 5}));
    assert!(matches!(
        admit(Operation::Update, &upgrade, Some(&old)),
        Err(Denial::Fenced { .. })
    ));
}

#[test]
fn lookups_and_authorization_are_denied_by_name() {
    let object = workspace(json!({}));
    let user = alice();
    let request = Request {
        operation: Operation::Create,
        user: &user,
        object: &object,
        old: None,
    };
    let PlanAction::Start(start) = plan_action(&request).unwrap() else {
        panic!("create starts")
    };
    let r = recipe("demo");
    let e = edge();
    let cases: [(Lookups<'_>, &str, &str); 5] = [
        (
            Lookups {
                recipe: None,
                edge: Some(&e),
                authorized: Ok(true),
            },
            "UnknownRecipe",
            "\"demo\"",
        ),
        (
            Lookups {
                recipe: Some(&r),
                edge: None,
                authorized: Ok(true),
            },
            "UnknownEdge",
            "\"edge-1\"",
        ),
        (
            Lookups {
                recipe: Some(&r),
                edge: Some(&e),
                authorized: Ok(false),
            },
            "EdgeNotAuthorized",
            "edges/edge-1",
        ),
        (
            Lookups {
                recipe: Some(&r),
                edge: Some(&e),
                authorized: Err("timeout".into()),
            },
            "AuthorizationUnavailable",
            "timeout",
        ),
        (
            Lookups {
                recipe: Some(&r),
                edge: Some(&e),
                authorized: Ok(true),
            },
            "RecipeInvalid",
            "allowlisted",
        ),
    ];
    for (i, (lookups, reason, text)) in cases.into_iter().enumerate() {
        let allowlist = if i == 4 { vec![] } else { allow() };
        let denial = seal_attempt(&request, &start, lookups, &sealer(), &allowlist).unwrap_err();
        assert_eq!(denial.reason(), reason);
        assert!(denial.to_string().contains(text), "{denial}");
    }
}

#[test]
fn values_outside_the_schema_are_denied_with_their_path() {
    let denial = admit(
        Operation::Create,
        &workspace(json!({"image": {"repository": "evil"}})),
        None,
    )
    .unwrap_err();
    assert_eq!(denial.field(), "spec.values.image.repository");
    assert_eq!(denial.reason(), "ValueNotAllowed");
}

#[test]
fn the_stored_plan_needs_no_key_after_rotation() {
    let old = created();
    let mut new = old.clone();
    new.metadata.annotations = Some([("a".to_owned(), "b".to_owned())].into());
    let user = alice();
    let request = Request {
        operation: Operation::Update,
        user: &user,
        object: &new,
        old: Some(&old),
    };
    assert!(validate(&request, &Keyring::default()).is_ok());
}

#[test]
fn a_missing_plan_is_denied_by_validation() {
    let object = workspace(json!({}));
    let user = alice();
    let request = Request {
        operation: Operation::Create,
        user: &user,
        object: &object,
        old: None,
    };
    assert_eq!(
        validate(&request, &Keyring::from(&sealer())),
        Err(Denial::PlanMissing)
    );
}
