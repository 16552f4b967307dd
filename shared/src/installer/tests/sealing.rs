//! A sealed plan is checked before anything is done with it: the attempt waits for the
//! webhook's seal, binds to its Workspace, and is refused when the seal, the binding, the
//! attempt number or the target does not hold.

use super::*;

#[test]
fn unsealed_waits_for_the_webhook() {
    let ws = workspace(None, None);
    let decision = Case::new(&ws).decide();
    assert_eq!(steps(&decision), ["write-status"]);
    let status = last_status(&decision);
    assert_eq!(status.phase, Some(Phase::Pending));
    assert_eq!(
        condition(&status, "Ready"),
        ("False".into(), "AwaitingPlan".into())
    );
}

#[test]
fn new_attempt_binds_to_the_workspace() {
    let mut ws = workspace(Some(plan(1)), None);
    ws.metadata.finalizers = None;
    let decision = Case::new(&ws).decide();
    // One pass prepares everything: the record first, then the namespace and what goes
    // into it, the Job last. If a create fails, the shell runs nothing after it.
    assert_eq!(
        steps(&decision),
        [
            "add-finalizer",
            "write-status",
            "create-namespace",
            "create-service-account",
            "create-role",
            "create-role-binding",
            "create-job"
        ]
    );
    assert!(
        events(&decision).is_empty(),
        "the result's Event says it all"
    );
    let created = decision
        .actions
        .iter()
        .find_map(|a| match a {
            Action::CreateNamespace(ns) => Some(ns.metadata.labels.clone().unwrap_or_default()),
            _ => None,
        })
        .expect("a namespace");
    // The edge's confinement policy admits no namespace from the installer without it.
    assert_eq!(created["pod-security.kubernetes.io/enforce"], "baseline");
    let status = last_status(&decision);
    assert_eq!(status.attempt, Some(1));
    assert_eq!(status.workspace_uid.as_deref(), Some(UID));
    assert_eq!(status.attempts.len(), 1);
    assert!(
        status.preparation.is_some(),
        "the preparation is recorded first"
    );
    assert_eq!(status.phase, Some(Phase::Progressing));
    assert_eq!(decision.next, Next::Continue);
}

#[rstest]
#[case::bad_signature("bad signature", 1, |_: &mut Plan| {}, Signer::Forger)]
#[case::another_name("sealed for another name", 1, |p: &mut Plan| p.workspace.name = "other".into(), Signer::Sealer)]
#[case::another_uid("sealed for another UID", 2, |p: &mut Plan| p.workspace.uid = OTHER_UID.into(), Signer::Sealer)]
#[case::later_attempt_without_uid("later attempt without UID", 2, |p: &mut Plan| p.workspace.uid = String::new(), Signer::Sealer)]
#[case::another_organization("another organization", 1, |p: &mut Plan| p.org = "org-b".into(), Signer::Sealer)]
#[case::dry_run("sealed for a dry run", 1, |p: &mut Plan| p.dry_run = true, Signer::Sealer)]
fn plan_must_verify(
    #[case] row: &str,
    #[case] attempt: i64,
    #[case] edit: fn(&mut Plan),
    #[case] signer: Signer,
) {
    let sealer = crate::seal::Sealer::from_seed([4; 32]);
    let keyring = crate::seal::Keyring::from(&sealer);
    let forger = crate::seal::Sealer::from_seed([5; 32]);
    let mut unsealed = plan(attempt);
    edit(&mut unsealed);
    let sealed = match signer {
        Signer::Sealer => sealer.seal(unsealed).unwrap(),
        Signer::Forger => forger.seal(unsealed).unwrap(),
    };
    let plan = sealed.plan.clone();
    let mut ws = workspace(None, None);
    ws.spec.plan = Some(sealed);
    let mut case = Case::new(&ws);
    case.seal = SealCheck::of(&ws, Ok(&keyring));
    assert!(matches!(case.seal, SealCheck::Invalid(_)), "{row}");
    let decision = case.decide();
    assert_eq!(edge_actions(&decision), 0, "{row}: nothing on the edge");
    let status = last_status(&decision);
    assert_eq!(status.job_result, Some(JobResult::Rejected), "{row}");
    assert_eq!(status.attempt, Some(plan.attempt), "{row}");
    assert!(status.cleaned_up, "{row}");
    assert_eq!(
        condition(&status, "Failed"),
        ("True".into(), "SealInvalid".into()),
        "{row}"
    );
    assert_eq!(status.phase, Some(Phase::Failed), "{row}");
}

/// Who signs a plan in [`plan_must_verify`]: the key the keyring holds, or another.
#[derive(Debug, Clone, Copy)]
enum Signer {
    Sealer,
    Forger,
}

#[test]
fn keys_unavailable_wait_without_judging() {
    let ws = workspace(Some(plan(1)), None);
    let mut case = Case::new(&ws);
    case.seal = SealCheck::KeysUnavailable("ConfigMap not found".into());
    let decision = case.decide();
    assert_eq!(edge_actions(&decision), 0);
    assert_eq!(decision.next, Next::After(30));
    let status = last_status(&decision);
    assert_eq!(status.job_result, None);
    assert_eq!(
        condition(&status, "Progressing").1,
        "SealingKeysUnavailable"
    );
}

#[test]
fn replayed_plan_is_refused() {
    let mut newer = bound(2, Some("job-uid"));
    newer.job_result = Some(JobResult::Succeeded);
    newer.cleaned_up = true;
    let ws = workspace(Some(plan(1)), Some(newer));
    let decision = Case::new(&ws).decide();
    assert_eq!(edge_actions(&decision), 0);
    let status = last_status(&decision);
    assert_eq!(status.attempt, Some(2), "the recorded attempt is kept");
    assert_eq!(status.job_result, Some(JobResult::Succeeded));
    assert_eq!(
        condition(&status, "Failed"),
        ("True".into(), "SealInvalid".into())
    );
}

#[test]
fn seal_is_checked_before_creating() {
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.seal = SealCheck::Invalid("signature mismatch".into());
    case.edge_objects = Some(prepared(1));
    let decision = case.decide();
    assert!(!steps(&decision).contains(&"create-job"));
    assert!(
        steps(&decision).contains(&"delete-service-account"),
        "the preparation is removed"
    );
    assert_eq!(last_status(&decision).job_result, Some(JobResult::Rejected));
}

#[test]
fn target_mismatch_is_refused() {
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Ready(EdgeRoute {
        cluster: "cluster-2".into(),
        workspace_uuid: "ews-1".into(),
        server: "https://edge".into(),
    });
    case.edge_objects = Some(prepared(1));
    let decision = case.decide();
    assert!(!steps(&decision).contains(&"create-job"));
    assert_eq!(
        condition(&last_status(&decision), "Failed").1,
        "TargetMismatch"
    );
}
