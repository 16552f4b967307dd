//! Rule `automatic_repair_is_the_installers_request`, case by case.

use k8s_openapi::{api::authentication::v1::UserInfo, apimachinery::pkg::apis::meta::v1::Time};
use serde_json::json;

use super::{
    admit_with, alice, allow, edge, now, recipe, request, seal_with, with_result, workspace,
};
use crate::{
    admission::{
        Denial, Operation,
        automatic_repair::automatic_repair_consumed,
        mutate::{Lookups, PlanAction, plan_action},
        validate::validate,
    },
    api::{Cause, Drift, DriftPolicy, JobResult, RecipeSpec, Repair, Workspace},
    installer::names::ANNOTATION_AUTOMATIC_REPAIR,
    seal::Keyring,
};

fn installer() -> UserInfo {
    UserInfo {
        username: Some("system:serviceaccount:providers-system:providers-controller".into()),
        groups: Some(vec!["system:serviceaccounts".into()]),
        ..Default::default()
    }
}

fn repairing(repair: Repair) -> RecipeSpec {
    RecipeSpec {
        drift: Some(DriftPolicy {
            repair: Some(repair),
            ..Default::default()
        }),
        ..recipe("demo")
    }
}

/// Attempt 1 installed from a Recipe whose drift policy says `repair`, then found drifted.
fn drifted(repair: Repair) -> Workspace {
    let created = admit_with(
        Operation::Create,
        &workspace(json!({"replicaCount": 2})),
        None,
        &repairing(repair),
    )
    .expect("create is admitted");
    let mut ws = with_result(created, Some(JobResult::Succeeded));
    ws.status.as_mut().unwrap().drift = Some(Drift {
        detected_at: Time(now()),
        ..crate::testing::drift("ObjectChanged", "ConfigMap demo/ws-greeting was changed")
    });
    ws
}

/// The installer's request: spec.retry raised and the annotation naming `attempt`.
fn asked(old: &Workspace, attempt: &str) -> Workspace {
    let mut new = old.clone();
    new.spec.retry = Some(old.spec.retry.unwrap_or(0) + 1);
    new.metadata
        .annotations
        .get_or_insert_default()
        .insert(ANNOTATION_AUTOMATIC_REPAIR.into(), attempt.into());
    new
}

fn lookups<'a>(
    recipe: &'a RecipeSpec,
    edge: &'a crate::api::EdgeSpec,
    repairer: Result<bool, String>,
) -> Lookups<'a> {
    Lookups {
        recipe: Some(recipe),
        edge: Some(edge),
        may_install: Ok(true),
        may_use: Ok(true),
        automatic_repairer: repairer,
    }
}

/// The mutating decision for `new` over `old`, as `user`.
fn decide(user: &UserInfo, new: &Workspace, old: &Workspace) -> Result<PlanAction, Denial> {
    plan_action(&request(Operation::Update, user, new, Some(old)))
}

#[test]
fn the_installers_request_is_sealed_as_a_repair_for_the_plans_owner() {
    let old = drifted(Repair::Automatic);
    let new = asked(&old, "1");
    let user = installer();
    let request = request(Operation::Update, &user, &new, Some(&old));
    let PlanAction::Start(start) = plan_action(&request).unwrap() else {
        panic!("an automatic repair starts an attempt")
    };
    let original = start
        .kind
        .automatic_repair()
        .expect("an automatic repair")
        .clone();
    assert_eq!(start.attempt, 2);
    let (recipe, edge) = (repairing(Repair::Automatic), edge());
    let sealed = seal_with(
        &request,
        &start,
        lookups(&recipe, &edge, Ok(true)),
        &allow(),
    )
    .unwrap();
    assert_eq!(sealed.plan.cause, Some(Cause::AutomaticRepair));
    // The owner's attempt, not the installer's: RBAC was asked as alice.
    assert_eq!(sealed.plan.owner, original.plan.owner);
    assert_eq!(sealed.plan.owner.username, alice().username.unwrap());
    assert_eq!(
        (
            &sealed.plan.chart,
            &sealed.plan.version,
            &sealed.plan.values_digest
        ),
        (
            &original.plan.chart,
            &original.plan.version,
            &original.plan.values_digest
        )
    );
    // The webhook consumes the annotation in the same patch.
    assert!(automatic_repair_consumed(&new).is_some());
    assert!(automatic_repair_consumed(&old).is_none());
}

#[test]
fn only_an_identity_allowed_autorepair_gets_one_sealed() {
    let old = drifted(Repair::Automatic);
    let new = asked(&old, "1");
    // alice herself may repair by hand, but not in her own name "automatically".
    for (user, repairer, reason, code) in [
        (alice(), Ok(false), "AutomaticRepairNotInstaller", 403),
        (
            installer(),
            Err("timeout".to_owned()),
            "AutomaticRepairUnverified",
            503,
        ),
    ] {
        let request = request(Operation::Update, &user, &new, Some(&old));
        let PlanAction::Start(start) = plan_action(&request).unwrap() else {
            panic!("the request is well formed")
        };
        let (recipe, edge) = (repairing(Repair::Automatic), edge());
        let denial = seal_with(
            &request,
            &start,
            lookups(&recipe, &edge, repairer),
            &allow(),
        )
        .unwrap_err();
        assert_eq!((denial.reason(), denial.code()), (reason, code));
        assert_eq!(
            denial.field(),
            format!("metadata.annotations[{ANNOTATION_AUTOMATIC_REPAIR}]")
        );
        assert!(
            denial.to_string().contains("kubectl provider repair"),
            "{denial}"
        );
    }
}

#[test]
fn nothing_but_a_drifted_installed_attempt_under_automatic_repair_is_repaired() {
    let user = installer();
    let refused = |result: Result<PlanAction, Denial>, says: &str| {
        let denial = result.expect_err("refused");
        assert_eq!(denial.reason(), "AutomaticRepairRefused", "{denial}");
        assert!(denial.to_string().contains(says), "{denial}");
    };
    // The Recipe repairs by hand.
    let manual = drifted(Repair::Manual);
    refused(
        decide(&user, &asked(&manual, "1"), &manual),
        "repairs by hand",
    );
    // Not drifted.
    let mut in_sync = drifted(Repair::Automatic);
    in_sync.status.as_mut().unwrap().drift = None;
    refused(
        decide(&user, &asked(&in_sync, "1"), &in_sync),
        "not an installed release",
    );
    // Failed, not installed.
    let mut failed = drifted(Repair::Automatic);
    failed.status.as_mut().unwrap().job_result = Some(JobResult::Failed);
    refused(
        decide(&user, &asked(&failed, "1"), &failed),
        "not an installed release",
    );
    let old = drifted(Repair::Automatic);
    // Another attempt than the installed one.
    refused(decide(&user, &asked(&old, "3"), &old), "attempt is 1 now");
    // Without a raised spec.retry.
    let mut unraised = asked(&old, "1");
    unraised.spec.retry = old.spec.retry;
    refused(decide(&user, &unraised, &old), "must raise spec.retry");
    // With a change of intent.
    let mut upgrade = asked(&old, "1");
    upgrade.spec.values = Some(json!({"replicaCount": 3}));
    refused(decide(&user, &upgrade, &old), "changes spec.values");
    // Together with a rollback.
    let mut both = asked(&old, "1");
    both.metadata.annotations.as_mut().unwrap().insert(
        crate::installer::names::ANNOTATION_ROLLBACK_TO.into(),
        "1".into(),
    );
    refused(decide(&user, &both, &old), "not both");
    // On a new Workspace.
    let fresh = asked(&workspace(json!({})), "1");
    refused(
        plan_action(&request(Operation::Create, &user, &fresh, None)),
        "nothing installed",
    );
    // Not an attempt number.
    for value in ["", "0", "01", "+1", "1e0", "x"] {
        let denial = decide(&user, &asked(&old, value), &old).unwrap_err();
        assert_eq!(denial.reason(), "AutomaticRepairInvalid", "{value:?}");
    }
}

#[test]
fn an_annotation_nothing_was_sealed_for_is_never_stored() {
    // A write that keeps the plan but carries the annotation (the mutating webhook
    // bypassed): the validating webhook refuses it.
    let old = drifted(Repair::Automatic);
    let mut new = old.clone();
    new.metadata
        .annotations
        .get_or_insert_default()
        .insert(ANNOTATION_AUTOMATIC_REPAIR.into(), "1".into());
    let user = installer();
    let denial = validate(
        &request(Operation::Update, &user, &new, Some(&old)),
        &Keyring::from(&super::sealer()),
    )
    .unwrap_err();
    assert_eq!(denial.reason(), "AutomaticRepairRefused");
}
