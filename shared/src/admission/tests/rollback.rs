//! The rules of a repair and a rollback: which kept plan is sealed again, and when not.

use serde_json::json;

use super::{admit, admit_with, created, raise_retry, recipe, with_result};
use crate::{
    admission::{Denial, Operation},
    api::{AttemptRecord, Cause, JobResult, KeptPlan, Workspace},
    installer::names::ANNOTATION_ROLLBACK_TO,
};

/// `ws` with its sealed attempt recorded as succeeded and its plan kept, as the installer
/// leaves it.
fn succeeded(ws: Workspace) -> Workspace {
    let sealed = ws.spec.plan.clone().unwrap();
    let mut previous = ws.status.clone().unwrap_or_default().attempts;
    let mut ws = with_result(ws, Some(JobResult::Succeeded));
    previous.push(AttemptRecord {
        attempt: sealed.plan.attempt,
        attempt_id: sealed.plan.attempt_id.clone(),
        version: sealed.plan.version.clone(),
        owner: "alice".into(),
        job: sealed.plan.job.clone(),
        result: Some(JobResult::Succeeded),
        finished_at: None,
        message: None,
        cause: sealed.plan.cause,
        restores: sealed.plan.restores,
        kept: Some(KeptPlan {
            version: ws.spec.version.clone(),
            values: ws.spec.values.clone(),
            plan: sealed,
        }),
    });
    ws.status.as_mut().unwrap().attempts = previous;
    ws
}

/// Attempt 1 (values replicaCount 2, default version) and attempt 2 (replicaCount 4,
/// version 1.1.0), both succeeded.
fn upgraded() -> Workspace {
    let first = succeeded(created());
    let mut new = first.clone();
    new.spec.values = Some(json!({"replicaCount": 4}));
    new.spec.version = Some("1.1.0".into());
    let mut second = admit(Operation::Update, &new, Some(&first)).unwrap();
    second.status = first.status.clone();
    succeeded(second)
}

fn rollback_to(old: &Workspace, attempt: &str) -> Workspace {
    let mut new = raise_retry(old);
    new.metadata
        .annotations
        .get_or_insert_default()
        .insert(ANNOTATION_ROLLBACK_TO.into(), attempt.into());
    new
}

#[test]
fn a_rollback_seals_the_kept_plan_again_and_restores_its_intent() {
    let old = upgraded();
    let stored = admit(Operation::Update, &rollback_to(&old, "1"), Some(&old)).unwrap();
    let plan = &stored.spec.plan.as_ref().unwrap().plan;
    let first = &old.status.as_ref().unwrap().attempts[0];
    let kept = &first.kept.as_ref().unwrap().plan.plan;
    assert_eq!(plan.attempt, 3);
    assert_eq!(
        (plan.cause, plan.restores),
        (Some(Cause::Rollback), Some(1))
    );
    assert_eq!(
        (&plan.chart, &plan.version, &plan.values),
        (&kept.chart, &kept.version, &kept.values)
    );
    assert_eq!(stored.spec.values, Some(json!({"replicaCount": 2})));
    assert_eq!(stored.spec.version, None);
    assert!(
        stored
            .metadata
            .annotations
            .as_ref()
            .is_none_or(|a| !a.contains_key(ANNOTATION_ROLLBACK_TO)),
        "the annotation is consumed"
    );
}

#[test]
fn a_rollback_is_refused_while_an_attempt_is_active() {
    let mut old = upgraded();
    old.status.as_mut().unwrap().job_result = None;
    assert_eq!(
        admit(Operation::Update, &rollback_to(&old, "1"), Some(&old)).unwrap_err(),
        Denial::RollbackWhileActive { attempt: 2 }
    );
}

#[test]
fn a_rollback_needs_a_kept_plan_a_number_and_a_raised_retry() {
    let old = upgraded();
    assert_eq!(
        admit(Operation::Update, &rollback_to(&old, "7"), Some(&old)).unwrap_err(),
        Denial::RollbackNotKept {
            attempt: 7,
            kept: vec![1, 2]
        }
    );
    for odd in ["one", " 1", "+1", "01", "1e0", "0", "-1", ""] {
        assert!(
            matches!(
                admit(Operation::Update, &rollback_to(&old, odd), Some(&old)).unwrap_err(),
                Denial::RollbackTargetInvalid { .. }
            ),
            "{odd:?}"
        );
    }
    assert_eq!(
        admit(Operation::Update, &rollback_to(&old, "2"), Some(&old)).unwrap_err(),
        Denial::RollbackToCurrent { attempt: 2 }
    );
    let mut unraised = rollback_to(&old, "1");
    unraised.spec.retry = old.spec.retry;
    assert_eq!(
        admit(Operation::Update, &unraised, Some(&old)).unwrap_err(),
        Denial::RollbackNeedsRetry { attempt: 1 }
    );
    // An annotation stored while the webhooks were bypassed is no license for later
    // writes: any write that carries it without a raised retry is refused.
    let mut stale = old.clone();
    stale.metadata.annotations = unraised.metadata.annotations.clone();
    let mut relabelled = stale.clone();
    relabelled.metadata.labels = Some([("a".to_owned(), "b".to_owned())].into());
    assert_eq!(
        admit(Operation::Update, &relabelled, Some(&stale)).unwrap_err(),
        Denial::RollbackNeedsRetry { attempt: 1 }
    );
    let mut changed = rollback_to(&old, "1");
    changed.spec.values = Some(json!({"replicaCount": 5}));
    assert_eq!(
        admit(Operation::Update, &changed, Some(&old)).unwrap_err(),
        Denial::RollbackWithIntentChange { field: "values" }
    );
}

#[test]
fn a_rollback_to_a_withdrawn_version_is_refused_with_the_reason() {
    let old = upgraded();
    let mut today = recipe("demo");
    today.versions = vec!["1.1.0".into()];
    let denial = admit_with(
        Operation::Update,
        &rollback_to(&old, "1"),
        Some(&old),
        &today,
    )
    .unwrap_err();
    assert!(
        matches!(&denial, Denial::RollbackWithdrawn { attempt: 1, .. }),
        "{denial:?}"
    );
    assert!(
        denial
            .to_string()
            .contains("no longer offers version \"1.2.0\""),
        "{denial}"
    );
}

#[test]
fn a_kept_plan_that_does_not_verify_is_never_sealed_again() {
    let mut old = upgraded();
    let record = &mut old.status.as_mut().unwrap().attempts[0];
    record.kept.as_mut().unwrap().plan.plan.values_digest =
        Some(crate::plan_values::digest_of(&json!({"replicaCount": 5})));
    assert!(matches!(
        admit(Operation::Update, &rollback_to(&old, "1"), Some(&old)).unwrap_err(),
        Denial::RetryOfUnverifiedPlan { attempt: 1, .. }
    ));
}

#[test]
fn a_raised_retry_repairs_a_drifted_release_with_the_same_plan() {
    let old = succeeded(created());
    // Without drift, a raise after a success starts nothing.
    let unchanged = admit(Operation::Update, &raise_retry(&old), Some(&old)).unwrap();
    assert_eq!(unchanged.spec.plan, old.spec.plan);
    let mut drifted = old.clone();
    drifted.status.as_mut().unwrap().drift =
        Some(crate::testing::drift("ReleaseMissing", "uninstalled"));
    let repaired = admit(Operation::Update, &raise_retry(&drifted), Some(&drifted)).unwrap();
    let plan = &repaired.spec.plan.as_ref().unwrap().plan;
    let original = &old.spec.plan.as_ref().unwrap().plan;
    assert_eq!((plan.attempt, plan.cause), (2, Some(Cause::Repair)));
    assert_eq!(
        (&plan.chart, &plan.version, &plan.values),
        (&original.chart, &original.version, &original.values)
    );
}

#[test]
fn a_rollback_does_not_move_a_workspace_to_another_edge() {
    let first = succeeded(created());
    let mut moved = first.clone();
    moved.spec.edge = "edge-2".into();
    let mut second = admit(Operation::Update, &moved, Some(&first)).unwrap();
    second.status = first.status.clone();
    let second = succeeded(second);
    assert!(matches!(
        admit(Operation::Update, &rollback_to(&second, "1"), Some(&second)).unwrap_err(),
        Denial::RollbackAcrossTargets {
            attempt: 1,
            field: "edge",
            ..
        }
    ));
}
