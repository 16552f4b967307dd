//! One case per rule of what a valid plan is.

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::{SignedDuration, Timestamp},
};
use serde_json::json;

use super::{Binding, PlanDefect, verify_plan};
use crate::{
    api::{Plan, SealedPlan},
    seal::{Keyring, SealError, Sealer},
    testing,
};

fn sealed_at() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

fn plan(attempt: i64, uid: &str) -> Plan {
    let mut plan = Plan {
        attempt,
        sealed_at: Some(Time(sealed_at())),
        ..testing::plan()
    };
    plan.workspace.uid = uid.into();
    plan
}

fn sealer() -> Sealer {
    Sealer::from_seed([5; 32])
}

fn seal(plan: Plan) -> SealedPlan {
    sealer().seal(plan).unwrap()
}

fn workspace(uid: &str, created: Option<Timestamp>) -> Binding<'_> {
    Binding {
        namespace: "org-a",
        name: "ws",
        uid,
        created,
        dry_run: false,
    }
}

fn check(sealed: &SealedPlan, binding: &Binding<'_>) -> Result<(), PlanDefect> {
    verify_plan(sealed, &Keyring::from(&sealer()), binding)
}

#[test]
fn a_plan_bound_to_its_workspace_is_valid() {
    assert_eq!(
        check(&seal(plan(2, "uid-1")), &workspace("uid-1", None)),
        Ok(())
    );
    let created = sealed_at()
        .checked_add(SignedDuration::from_millis(40))
        .unwrap();
    assert_eq!(
        check(&seal(plan(1, "")), &workspace("uid-1", Some(created))),
        Ok(())
    );
}

#[test]
fn a_seal_that_does_not_verify_is_refused() {
    let mut altered = seal(plan(2, "uid-1"));
    altered.plan.version = "9.9.9".into();
    assert_eq!(
        check(&altered, &workspace("uid-1", None)),
        Err(PlanDefect::Seal(SealError::SignatureMismatch))
    );
    let foreign = Sealer::from_seed([6; 32]).seal(plan(2, "uid-1")).unwrap();
    assert!(matches!(
        check(&foreign, &workspace("uid-1", None)),
        Err(PlanDefect::Seal(SealError::UnknownKey { .. }))
    ));
}

#[test]
fn a_dry_run_plan_is_refused_outside_a_dry_run() {
    let mut dry = plan(2, "uid-1");
    dry.dry_run = true;
    let dry = seal(dry);
    assert_eq!(
        check(&dry, &workspace("uid-1", None)),
        Err(PlanDefect::DryRun { attempt: 2 })
    );
    let in_a_dry_run = Binding {
        dry_run: true,
        ..workspace("uid-1", None)
    };
    assert_eq!(check(&dry, &in_a_dry_run), Ok(()));
}

#[test]
fn a_plan_of_another_workspace_is_refused() {
    let mut other = plan(2, "uid-1");
    other.workspace.name = "other".into();
    assert!(matches!(
        check(&seal(other), &workspace("uid-1", None)),
        Err(PlanDefect::OtherWorkspace { .. })
    ));
    let mut org = plan(2, "uid-1");
    org.org = "org-b".into();
    assert!(matches!(
        check(&seal(org), &workspace("uid-1", None)),
        Err(PlanDefect::OtherOrganization { .. })
    ));
    assert!(matches!(
        check(&seal(plan(2, "uid-0")), &workspace("uid-1", None)),
        Err(PlanDefect::OtherUid { .. })
    ));
}

#[test]
fn only_a_first_attempt_may_omit_the_uid_and_only_with_its_seal_time() {
    assert_eq!(
        check(&seal(plan(2, "")), &workspace("uid-1", None)),
        Err(PlanDefect::UidMissing { attempt: 2 })
    );
    let mut timeless = plan(1, "");
    timeless.sealed_at = None;
    assert_eq!(
        check(&seal(timeless), &workspace("uid-1", None)),
        Err(PlanDefect::SealTimeMissing)
    );
}

#[test]
fn a_uid_less_plan_sealed_for_another_creation_is_refused() {
    let later = sealed_at()
        .checked_add(SignedDuration::from_mins(5))
        .unwrap();
    assert!(matches!(
        check(&seal(plan(1, "")), &workspace("uid-1", Some(later))),
        Err(PlanDefect::SealedForAnotherCreation { .. })
    ));
    let earlier = sealed_at()
        .checked_sub(SignedDuration::from_mins(5))
        .unwrap();
    assert!(matches!(
        check(&seal(plan(1, "")), &workspace("uid-1", Some(earlier))),
        Err(PlanDefect::SealedForAnotherCreation { .. })
    ));
}

#[test]
fn attempt_numbers_start_at_one() {
    assert_eq!(
        check(&seal(plan(0, "uid-1")), &workspace("uid-1", None)),
        Err(PlanDefect::BadAttempt { attempt: 0 })
    );
}

#[test]
fn a_seal_noted_when_signed_verifies_and_a_changed_copy_still_does_not() {
    let keyring = Keyring::from(&sealer());
    let sealed = sealer().seal_noted(plan(2, "uid-1"), &keyring).unwrap();
    assert_eq!(
        verify_plan(&sealed, &keyring, &workspace("uid-1", None)),
        Ok(())
    );
    // The same signature over other bytes is another digest: verified, and refused.
    let mut altered = sealed.clone();
    altered.plan.values = Some(json!({"replicas": 9}));
    assert_eq!(
        verify_plan(&altered, &keyring, &workspace("uid-1", None)),
        Err(PlanDefect::Seal(SealError::SignatureMismatch))
    );
    // The binding is checked on every call, noted or not.
    assert!(matches!(
        verify_plan(&sealed, &keyring, &workspace("uid-2", None)),
        Err(PlanDefect::OtherUid { .. })
    ));
}

#[test]
fn a_seal_is_noted_only_in_a_keyring_that_holds_its_key() {
    let foreign = Sealer::from_seed([6; 32]);
    let keyring = Keyring::from(&sealer());
    let sealed = foreign.seal_noted(plan(2, "uid-1"), &keyring).unwrap();
    assert!(matches!(
        verify_plan(&sealed, &keyring, &workspace("uid-1", None)),
        Err(PlanDefect::Seal(SealError::UnknownKey { .. }))
    ));
}

#[test]
fn a_seal_that_failed_is_never_remembered_as_verified() {
    let keyring = Keyring::from(&sealer());
    let mut forged = seal(plan(2, "uid-1"));
    forged.plan.version = "9.9.9".into();
    for _ in 0..2 {
        assert_eq!(
            verify_plan(&forged, &keyring, &workspace("uid-1", None)),
            Err(PlanDefect::Seal(SealError::SignatureMismatch))
        );
    }
}
