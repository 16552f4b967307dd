//! Table-driven tests of the admission rules, one case per rule.

mod automatic_repair;
mod rollback;

use k8s_openapi::{
    api::authentication::v1::UserInfo,
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::{SignedDuration, Timestamp},
};
use serde_json::json;

use super::{
    Denial, Operation, Request,
    mutate::{
        Lookups, PlanAction, Sealing, StartKind, carried_plan_warning, plan_action, seal_attempt,
    },
    validate::validate,
};
use crate::{
    api::{
        EdgeSpec, ExecutionRule, JobResult, RecipeSpec, Workspace, WorkspaceSpec, WorkspaceStatus,
    },
    plan::Withdrawn,
    seal::{Keyring, Sealer},
    testing,
    verify::PlanDefect,
};

pub(super) fn sealer() -> Sealer {
    Sealer::from_seed([7; 32])
}

/// The time every review in these tests happens at.
pub(super) fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

pub(super) fn request<'a>(
    operation: Operation,
    user: &'a UserInfo,
    object: &'a Workspace,
    old: Option<&'a Workspace>,
) -> Request<'a> {
    Request {
        operation,
        user,
        object,
        old,
        dry_run: false,
        now: now(),
    }
}

pub(super) fn seal_with(
    request: &Request<'_>,
    start: &super::mutate::Start,
    lookups: Lookups<'_>,
    allowlist: &[String],
) -> Result<crate::api::SealedPlan, Denial> {
    let sealer = sealer();
    let keyring = Keyring::from(&sealer);
    let sealing = Sealing {
        sealer: &sealer,
        keyring: &keyring,
        allowlist,
    };
    seal_attempt(request, start, lookups, &sealing).map(|attempt| {
        // A plan resolved afresh comes with the values it refers to by digest, a plan
        // sealed again without them (they are stored already).
        if let Some(values) = &attempt.values {
            assert_eq!(
                attempt.sealed.plan.values_digest.as_ref(),
                Some(&values.digest)
            );
        }
        attempt.sealed
    })
}

/// The digest of `values`, as a plan refers to them.
fn digest(values: serde_json::Value) -> Option<String> {
    Some(crate::plan_values::digest_of(&values))
}

pub(super) fn recipe(chart: &str) -> RecipeSpec {
    RecipeSpec {
        chart: testing::chart(chart),
        values: Some(json!({"replicaCount": 1})),
        values_schema: vec![testing::replica_count()],
        ..testing::recipe_spec()
    }
}

pub(super) fn edge() -> EdgeSpec {
    testing::edge_spec("edge-1")
}

pub(super) fn alice() -> UserInfo {
    UserInfo {
        username: Some("alice".into()),
        uid: Some("uid-alice".into()),
        groups: Some(vec!["tenants".into(), "system:authenticated".into()]),
        ..Default::default()
    }
}

pub(super) fn allow() -> Vec<String> {
    vec!["https://charts.example".into()]
}

pub(super) fn workspace(values: serde_json::Value) -> Workspace {
    testing::workspace_in("org-a", "ws", testing::with_values(values))
}

/// Runs the mutating decision end to end, as the webhook does, with every lookup found
/// and the user granted `install` and `use`. Returns the object as the API server would store it.
pub(super) fn admit(
    operation: Operation,
    object: &Workspace,
    old: Option<&Workspace>,
) -> Result<Workspace, Denial> {
    admit_with(operation, object, old, &recipe("demo"))
}

/// [`admit`] with the Recipe as the platform has it at the time of the request.
pub(super) fn admit_with(
    operation: Operation,
    object: &Workspace,
    old: Option<&Workspace>,
    recipe: &RecipeSpec,
) -> Result<Workspace, Denial> {
    let user = alice();
    let request = request(operation, &user, object, old);
    let mut result = object.clone();
    match plan_action(&request)? {
        PlanAction::Keep => {}
        PlanAction::Restore(plan) => result.spec.plan = Some(*plan),
        PlanAction::Start(start) => {
            let edge = edge();
            let lookups = Lookups {
                recipe: Some(recipe),
                edge: Some(&edge),
                may_install: Ok(true),
                may_use: Ok(true),
                automatic_repairer: Ok(false),
            };
            result.spec.plan = Some(seal_with(&request, &start, lookups, &allow())?);
            // As the webhook patches it: a rollback puts back the restored intent and
            // consumes its annotation.
            if let StartKind::Rollback { kept, .. } = &start.kind {
                let operations = super::rollback::rollback_patch(object, kept);
                let mut json = serde_json::to_value(&result).expect("a Workspace is JSON");
                json_patch::patch(&mut json, &operations).expect("the rollback patch applies");
                result = serde_json::from_value(json).expect("still a Workspace");
            }
        }
    }
    // The API server assigns the UID and creation time before validating admission.
    if operation == Operation::Create {
        result.metadata.uid = Some("uid-ws-1".into());
        result.metadata.creation_timestamp = Some(Time(now()));
    }
    let validating = self::request(operation, &user, &result, old);
    validate(&validating, &Keyring::from(&sealer()))?;
    // Every stored write gets a new resourceVersion, as in the API server.
    static VERSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let version = VERSION.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    result.metadata.resource_version = Some(version.to_string());
    Ok(result)
}

pub(super) fn with_result(mut ws: Workspace, result: Option<JobResult>) -> Workspace {
    let attempt = ws.spec.plan.as_ref().map(|p| p.plan.attempt);
    let attempt_id = ws.spec.plan.as_ref().map(|p| p.plan.attempt_id.clone());
    ws.status = Some(WorkspaceStatus {
        attempt,
        attempt_id,
        job_result: result,
        ..Default::default()
    });
    ws
}

pub(super) fn created() -> Workspace {
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
    assert_eq!(plan.values_digest, digest(json!({"replicaCount": 2})));
    assert_eq!(plan.values, None);
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
fn a_plan_carried_by_a_create_is_replaced_by_one_sealed_for_this_write() {
    // A restore from a backup, or a plan copied from another Workspace: the carried plan is
    // never what is stored, whatever it says (ADR 41).
    let without = admit(Operation::Create, &workspace(json!({})), None).unwrap();
    let mut carried = created().spec.plan.unwrap();
    carried.plan.workspace.uid = "uid-of-the-lost-workspace".into();
    carried.plan.attempt = 7;
    carried.plan.chart.name = "evil".into();
    carried.plan.owner.username = "someone-else".into();
    let mut object = workspace(json!({}));
    object.spec.plan = Some(carried.clone());
    let restored = admit(Operation::Create, &object, None).unwrap();
    let sealed = restored.spec.plan.unwrap();
    assert_ne!(sealed, carried);
    assert_eq!(
        Some(&sealed),
        without.spec.plan.as_ref(),
        "as if no plan were carried"
    );
    assert_eq!(sealed.plan.attempt, 1);
    assert!(sealed.plan.workspace.uid.is_empty());
    Keyring::from(&sealer()).verify(&sealed).unwrap();
}

#[test]
fn a_plan_carried_by_a_create_is_said_to_be_replaced_and_an_update_that_adds_one_is_denied() {
    let mut object = workspace(json!({}));
    let user = UserInfo {
        username: Some("platform-admin".into()),
        ..Default::default()
    };
    assert_eq!(
        carried_plan_warning(&request(Operation::Create, &user, &object, None)),
        None
    );
    object.spec.plan = created().spec.plan;
    let warning = carried_plan_warning(&request(Operation::Create, &user, &object, None)).unwrap();
    assert!(
        warning.starts_with("spec.plan: the plan this create carries was not used")
            && warning.contains("\"platform-admin\"")
            && warning.contains("Restoring the hub from a backup"),
        "{warning}"
    );
    // A Workspace stored without a plan (the webhooks bypassed) may not get one by hand.
    let mut stored = object.clone();
    stored.spec.plan = None;
    assert_eq!(
        plan_action(&request(Operation::Update, &user, &object, Some(&stored))),
        Err(Denial::PlanSetByUser)
    );
    assert_eq!(
        carried_plan_warning(&request(Operation::Update, &user, &object, Some(&stored))),
        None
    );
}

#[test]
fn an_overlong_version_is_denied_by_its_length_before_any_lookup() {
    let mut object = workspace(json!({}));
    object.spec.version = Some("1".repeat(super::MAX_VERSION_BYTES + 1));
    let denial = admit(Operation::Create, &object, None).unwrap_err();
    assert_eq!(denial.reason(), "VersionNotAllowed");
    assert_eq!(
        denial.to_string(),
        "spec.version: a chart version is at most 128 bytes, this one has 129; choose a version the Recipe offers (kubectl provider recipes) or leave spec.version out for its default"
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
        Err(Denial::PlanInvalid(PlanDefect::Seal(_)))
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
        Err(Denial::PlanInvalid(PlanDefect::OtherWorkspace { .. }))
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
        Err(Denial::PlanReplayed { attempt: 2 })
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
    let request = request(Operation::Update, &user, &new, Some(&failed));
    let PlanAction::Start(start) = plan_action(&request).unwrap() else {
        panic!("a retry starts an attempt")
    };
    assert!(matches!(start.kind, StartKind::Retry { .. }));
    // The platform changed the recipe's chart and defaults in between: the retry runs the
    // pinned plan, not the new recipe.
    let mut changed = recipe("changed-chart");
    changed.values = Some(json!({"replicaCount": 9}));
    let edge = edge();
    let lookups = Lookups {
        recipe: Some(&changed),
        edge: Some(&edge),
        may_install: Ok(true),
        may_use: Ok(true),
        automatic_repairer: Ok(false),
    };
    let sealed = seal_with(&request, &start, lookups, &allow()).unwrap();
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
fn a_retry_during_an_active_attempt_starts_nothing_and_warns() {
    let old = created();
    let mut new = old.clone();
    new.spec.retry = Some(1);
    let stored = admit(Operation::Update, &new, Some(&old)).unwrap();
    assert_eq!(stored.spec.plan, old.spec.plan);
    let user = alice();
    let warnings = validate(
        &request(Operation::Update, &user, &stored, Some(&old)),
        &Keyring::from(&sealer()),
    )
    .unwrap();
    assert!(
        warnings[0].contains("raise spec.retry again"),
        "{warnings:?}"
    );
    // Once the attempt has failed, the raise made while it ran does not retry by itself.
    let failed = with_result(stored, Some(JobResult::Failed));
    let mut relabelled = failed.clone();
    relabelled.metadata.labels = Some([("a".to_owned(), "b".to_owned())].into());
    assert_eq!(
        admit(Operation::Update, &relabelled, Some(&failed))
            .unwrap()
            .spec
            .plan,
        failed.spec.plan
    );
    // A further raise does.
    let mut raised = failed.clone();
    raised.spec.retry = Some(2);
    let retried = admit(Operation::Update, &raised, Some(&failed)).unwrap();
    assert_eq!(retried.spec.plan.unwrap().plan.attempt, 2);
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
        assert_eq!(plan.values_digest, digest(json!({"replicaCount": 4})));
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
        Err(Denial::DeletionFenced { .. })
    ));
    let mut upgrade = old.clone();
    upgrade.spec.values = Some(json!({"replicaCount": 5}));
    assert!(matches!(
        admit(Operation::Update, &upgrade, Some(&old)),
        Err(Denial::DeletionFenced { .. })
    ));
}

#[test]
fn lookups_and_authorization_are_denied_by_name() {
    let object = workspace(json!({}));
    let user = alice();
    let request = request(Operation::Create, &user, &object, None);
    let PlanAction::Start(start) = plan_action(&request).unwrap() else {
        panic!("create starts")
    };
    let r = recipe("demo");
    let e = edge();
    let cases: [(Lookups<'_>, &str, &str); 7] = [
        (
            Lookups {
                recipe: None,
                edge: Some(&e),
                may_install: Ok(true),
                may_use: Ok(true),
                automatic_repairer: Ok(false),
            },
            "UnknownRecipe",
            "\"demo\"",
        ),
        (
            Lookups {
                recipe: Some(&r),
                edge: None,
                may_install: Ok(true),
                may_use: Ok(true),
                automatic_repairer: Ok(false),
            },
            "UnknownEdge",
            "\"edge-1\"",
        ),
        (
            Lookups {
                recipe: Some(&r),
                edge: Some(&e),
                may_install: Ok(false),
                may_use: Ok(true),
                automatic_repairer: Ok(false),
            },
            "EdgeNotAuthorized",
            "edges/edge-1",
        ),
        (
            Lookups {
                recipe: Some(&r),
                edge: Some(&e),
                may_install: Err("timeout".into()),
                may_use: Ok(true),
                automatic_repairer: Ok(false),
            },
            "AuthorizationUnavailable",
            "timeout",
        ),
        (
            Lookups {
                recipe: Some(&r),
                edge: Some(&e),
                may_install: Ok(true),
                may_use: Ok(false),
                automatic_repairer: Ok(false),
            },
            "RecipeNotEntitled",
            "the `use` verb on recipes/demo",
        ),
        (
            Lookups {
                recipe: Some(&r),
                edge: Some(&e),
                may_install: Ok(true),
                may_use: Err("timeout".into()),
                automatic_repairer: Ok(false),
            },
            "RecipeAuthorizationUnavailable",
            "timeout",
        ),
        (
            Lookups {
                recipe: Some(&r),
                edge: Some(&e),
                may_install: Ok(true),
                may_use: Ok(true),
                automatic_repairer: Ok(false),
            },
            "RecipeInvalid",
            "allowlisted",
        ),
    ];
    for (i, (lookups, reason, text)) in cases.into_iter().enumerate() {
        let allowlist = if i == 6 { vec![] } else { allow() };
        let denial = seal_with(&request, &start, lookups, &allowlist).unwrap_err();
        assert_eq!(denial.reason(), reason);
        assert!(denial.to_string().contains(text), "{denial}");
    }
}

#[test]
fn a_denial_quotes_the_requesters_name_bounded() {
    let object = workspace(json!({}));
    let user = UserInfo {
        username: Some(format!("mallory\n{}", "x".repeat(900))),
        ..alice()
    };
    let request = request(Operation::Create, &user, &object, None);
    let PlanAction::Start(start) = plan_action(&request).unwrap() else {
        panic!("create starts")
    };
    let (r, e) = (recipe("demo"), edge());
    let lookups = Lookups {
        recipe: Some(&r),
        edge: Some(&e),
        may_install: Ok(false),
        may_use: Ok(true),
        automatic_repairer: Ok(false),
    };
    let message = seal_with(&request, &start, lookups, &allow())
        .unwrap_err()
        .to_string();
    assert!(
        message.starts_with("spec.edge: user \"mallory\\nxxx"),
        "{message}"
    );
    assert!(message.contains("more bytes) may not install"), "{message}");
    assert!(message.len() < 400, "{} bytes", message.len());
}

#[test]
fn values_outside_the_schema_are_denied_with_their_path() {
    let denial = admit(
        Operation::Create,
        &workspace(json!({"image": {"repository": "evil"}})),
        None,
    )
    .unwrap_err();
    assert_eq!(denial.field(), "spec.values.image");
    assert_eq!(denial.reason(), "ValueNotAllowed");
}

#[test]
fn the_stored_plan_needs_no_key_after_rotation() {
    let old = created();
    let mut new = old.clone();
    new.metadata.annotations = Some([("a".to_owned(), "b".to_owned())].into());
    let user = alice();
    let request = request(Operation::Update, &user, &new, Some(&old));
    assert!(validate(&request, &Keyring::default()).is_ok());
}

#[test]
fn a_missing_plan_is_denied_by_validation() {
    let object = workspace(json!({}));
    let user = alice();
    let request = request(Operation::Create, &user, &object, None);
    assert_eq!(
        validate(&request, &Keyring::from(&sealer())),
        Err(Denial::PlanMissing)
    );
}

/// A failed Workspace whose stored plan is `plan` as given (written while the webhooks were
/// bypassed), recorded as attempt `plan.attempt`.
fn failed_with_stored(plan: crate::api::SealedPlan) -> Workspace {
    let mut ws = created();
    ws.spec.plan = Some(plan);
    with_result(ws, Some(JobResult::Failed))
}

pub(super) fn raise_retry(old: &Workspace) -> Workspace {
    let mut new = old.clone();
    new.spec.retry = Some(old.spec.retry.unwrap_or(0) + 1);
    new
}

#[test]
fn a_retry_never_signs_a_plan_this_webhook_did_not_seal() {
    let genuine = created().spec.plan.unwrap();
    let forger = Sealer::from_seed([9; 32]);
    let mut forged = genuine.plan.clone();
    forged.values_digest = digest(json!({"replicaCount": 5, "image": {"repository": "evil"}}));
    let cases = [
        ("another key", forger.seal(forged.clone()).unwrap()),
        ("an altered plan", {
            let mut altered = genuine.clone();
            altered.plan.values_digest = forged.values_digest.clone();
            altered
        }),
    ];
    for (what, stored) in cases {
        let old = failed_with_stored(stored);
        let denial = admit(Operation::Update, &raise_retry(&old), Some(&old)).unwrap_err();
        assert!(
            matches!(
                denial,
                Denial::RetryOfUnverifiedPlan {
                    defect: PlanDefect::Seal(_),
                    ..
                }
            ),
            "{what}: {denial}"
        );
        assert_eq!(denial.field(), "spec.retry");
        assert!(!denial.to_string().contains("raise spec.retry"), "{denial}");
    }
}

#[test]
fn a_retry_never_signs_a_plan_bound_to_another_workspace() {
    let mut plan = created().spec.plan.unwrap().plan;
    plan.workspace.uid = "uid-of-a-deleted-workspace".into();
    plan.attempt = 2;
    let mut old = failed_with_stored(sealer().seal(plan).unwrap());
    old.metadata.uid = Some("uid-ws-1".into());
    let denial = admit(Operation::Update, &raise_retry(&old), Some(&old)).unwrap_err();
    assert!(
        matches!(
            denial,
            Denial::RetryOfUnverifiedPlan {
                defect: PlanDefect::OtherUid { .. },
                ..
            }
        ),
        "{denial}"
    );
}

#[test]
fn a_retry_never_signs_a_dry_run_plan() {
    let mut plan = created().spec.plan.unwrap().plan;
    plan.dry_run = true;
    let old = failed_with_stored(sealer().seal(plan).unwrap());
    let denial = admit(Operation::Update, &raise_retry(&old), Some(&old)).unwrap_err();
    assert!(
        matches!(
            denial,
            Denial::RetryOfUnverifiedPlan {
                defect: PlanDefect::DryRun { .. },
                ..
            }
        ),
        "{denial}"
    );
}

#[test]
fn a_retry_of_a_plan_that_is_not_the_recorded_attempt_is_denied() {
    let mut old = with_result(created(), Some(JobResult::Failed));
    old.status.as_mut().unwrap().attempt_id = Some("the-recorded-one".into());
    let denial = admit(Operation::Update, &raise_retry(&old), Some(&old)).unwrap_err();
    assert_eq!(denial.reason(), "RetryOfUnrecordedPlan");
}

#[test]
fn a_retry_of_what_the_platform_withdrew_is_denied_with_the_reason() {
    let old = with_result(created(), Some(JobResult::Failed));
    let new = raise_retry(&old);
    let mut no_version = recipe("demo");
    no_version.versions = vec!["2.0.0".into()];
    let mut other_repository = recipe("demo");
    other_repository.chart.repository = "https://elsewhere.example/charts".into();
    let mut narrower = recipe("demo");
    narrower.execution = vec![];
    let mut wider_old = created();
    wider_old.spec.plan = {
        let mut plan = wider_old.spec.plan.unwrap().plan;
        plan.execution = vec![ExecutionRule {
            api_groups: vec!["".into()],
            resources: vec!["secrets".into()],
            verbs: vec!["get".into()],
        }];
        Some(sealer().seal(plan).unwrap())
    };
    let wider_old = with_result(wider_old, Some(JobResult::Failed));
    let cases: [(&Workspace, &RecipeSpec, &str); 2] = [
        (&old, &no_version, "no longer offers version \"1.2.0\""),
        (&wider_old, &narrower, "no longer within what recipe"),
    ];
    for (old, recipe, text) in cases {
        let denial =
            admit_with(Operation::Update, &raise_retry(old), Some(old), recipe).unwrap_err();
        assert!(matches!(denial, Denial::RetryWithdrawn { .. }), "{denial}");
        assert!(denial.to_string().contains(text), "{denial}");
        assert!(denial.to_string().contains("change the intent"), "{denial}");
    }
    // The allowlist is the platform's too: a repository taken off it is withdrawn.
    let user = alice();
    let request = request(Operation::Update, &user, &new, Some(&old));
    let PlanAction::Start(start) = plan_action(&request).unwrap() else {
        panic!("a retry starts")
    };
    let (r, e) = (recipe("demo"), edge());
    let lookups = Lookups {
        recipe: Some(&r),
        edge: Some(&e),
        may_install: Ok(true),
        may_use: Ok(true),
        automatic_repairer: Ok(false),
    };
    let denial = seal_with(
        &request,
        &start,
        lookups,
        &["https://elsewhere.example".into()],
    )
    .unwrap_err();
    assert!(
        matches!(
            denial,
            Denial::RetryWithdrawn {
                why: Withdrawn::Repository { .. },
                ..
            }
        ),
        "{denial}"
    );
    let _ = other_repository;
}

#[test]
fn a_plan_records_who_when_and_whether_for_a_dry_run() {
    let plan = created().spec.plan.unwrap().plan;
    assert_eq!(plan.sealed_at, Some(Time(now())));
    assert!(!plan.dry_run);
    assert_eq!(
        plan.owner.groups,
        vec!["tenants".to_owned(), "system:authenticated".to_owned()]
    );
    let object = workspace(json!({}));
    let user = alice();
    let mut dry = request(Operation::Create, &user, &object, None);
    dry.dry_run = true;
    let PlanAction::Start(start) = plan_action(&dry).unwrap() else {
        panic!("create starts")
    };
    let (r, e) = (recipe("demo"), edge());
    let lookups = Lookups {
        recipe: Some(&r),
        edge: Some(&e),
        may_install: Ok(true),
        may_use: Ok(true),
        automatic_repairer: Ok(false),
    };
    let sealed = seal_with(&dry, &start, lookups, &allow()).unwrap();
    assert!(sealed.plan.dry_run);
    // In the dry run itself the plan is what the request should carry...
    let mut shown = object.clone();
    shown.spec.plan = Some(sealed);
    shown.metadata.uid = Some("uid-dry".into());
    shown.metadata.creation_timestamp = Some(Time(now()));
    let keyring = Keyring::from(&sealer());
    let mut validating = request(Operation::Create, &user, &shown, None);
    validating.dry_run = true;
    assert!(validate(&validating, &keyring).is_ok());
    // ...and anywhere else it is refused.
    validating.dry_run = false;
    assert_eq!(
        validate(&validating, &keyring).unwrap_err().reason(),
        "PlanSealedForDryRun"
    );
}

#[test]
fn a_first_plan_is_valid_only_for_the_creation_it_was_sealed_for() {
    let mut later = created();
    later.metadata.creation_timestamp = Some(Time(
        now().checked_add(SignedDuration::from_hours(1)).unwrap(),
    ));
    let user = alice();
    let denial = validate(
        &request(Operation::Create, &user, &later, None),
        &Keyring::from(&sealer()),
    )
    .unwrap_err();
    assert!(
        matches!(
            denial,
            Denial::PlanInvalid(PlanDefect::SealedForAnotherCreation { .. })
        ),
        "{denial}"
    );
}

#[test]
fn the_next_attempt_comes_after_the_recorded_one_even_under_an_older_stored_plan() {
    let mut old = with_result(created(), Some(JobResult::Succeeded));
    let status = old.status.as_mut().unwrap();
    status.attempt = Some(3);
    status.attempt_id = Some("attempt-3".into());
    let mut new = old.clone();
    new.spec.values = Some(json!({"replicaCount": 4}));
    let plan = admit(Operation::Update, &new, Some(&old))
        .unwrap()
        .spec
        .plan
        .unwrap()
        .plan;
    assert_eq!(plan.attempt, 4);
}

#[test]
fn names_are_checked_before_anything_is_looked_up_by_them() {
    for (recipe, edge, field) in [
        ("r".repeat(254), "edge-1".to_owned(), "spec.recipe"),
        ("Demo".to_owned(), "edge-1".to_owned(), "spec.recipe"),
        ("demo".to_owned(), "edge_1".to_owned(), "spec.edge"),
        ("demo".to_owned(), "".to_owned(), "spec.edge"),
    ] {
        let mut object = workspace(json!({}));
        object.spec.recipe = recipe;
        object.spec.edge = edge;
        let denial = admit(Operation::Create, &object, None).unwrap_err();
        assert_eq!(denial.reason(), "InvalidName", "{denial}");
        assert_eq!(denial.field(), field);
        assert!(denial.to_string().len() < 400, "{denial}");
    }
    assert!(super::mutate::is_object_name("edge-1.example"));
}
