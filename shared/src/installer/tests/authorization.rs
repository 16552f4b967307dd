//! The owner's authorization is asked again before an attempt starts, and a definite no
//! decides it.

use super::*;

#[test]
fn authorization_is_asked_again_before_start() {
    let mut unprepared = bound(1, None);
    unprepared.preparation = None;
    let ws = workspace(Some(plan(1)), Some(unprepared));
    let mut case = Case::new(&ws);
    case.authorization = Authorization::Denied("alice may no longer install onto edge-1".into());
    let decision = case.decide();
    let status = last_status(&decision);
    assert_eq!(status.job_result, Some(JobResult::Rejected));
    assert_eq!(condition(&status, "Failed").1, "NotAuthorized");
    assert!(
        !edge_steps(&decision)
            .iter()
            .any(|s| s.starts_with("create")),
        "{:?}",
        edge_steps(&decision)
    );
    assert!(status.preparation.is_none(), "no preparation is recorded");

    case.authorization = Authorization::Unavailable("timeout".into());
    let decision = case.decide();
    assert_eq!(decision.next, Next::After(10));
    assert!(edge_steps(&decision).is_empty());
    assert_eq!(
        condition(&last_status(&decision), "Ready").1,
        "AuthorizationUnavailable"
    );

    case.authorization = Authorization::NotAsked;
    let decision = case.decide();
    assert_eq!(decision.next, Next::Continue);
    assert!(edge_steps(&decision).is_empty());

    // Asked once: a prepared attempt does not ask again.
    let mut prepared_status = bound(1, None);
    prepared_status.preparation = Some(Preparation {
        preparation_id: "p1".into(),
        preparation_expires_at: Time(
            now()
                .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(60))
                .unwrap(),
        ),
    });
    let prepared_ws = workspace(Some(plan(1)), Some(prepared_status));
    assert!(!attempt_reads(&prepared_ws).unwrap().authorize);
    assert!(attempt_reads(&ws).unwrap().authorize);
}

#[test]
fn a_definite_no_on_the_edge_or_the_recipe_decides_the_owner_s_authorization() {
    let plan = plan(1);
    let no = || Ok(false);
    let yes = || Ok(true);
    let unanswered = || Err("timeout".to_owned());
    let denied =
        |a: Authorization, what: &str| matches!(&a, Authorization::Denied(m) if m.contains(what));
    assert!(denied(
        Authorization::of_owner(&plan, no(), unanswered()),
        "install onto edge"
    ));
    assert!(denied(
        Authorization::of_owner(&plan, unanswered(), no()),
        "use recipe"
    ));
    assert!(denied(
        Authorization::of_owner(&plan, yes(), no()),
        "`use` verb on recipes/"
    ));
    assert_eq!(
        Authorization::of_owner(&plan, yes(), unanswered()),
        Authorization::Unavailable("timeout".into())
    );
    assert_eq!(
        Authorization::of_owner(&plan, yes(), yes()),
        Authorization::Allowed
    );
}
