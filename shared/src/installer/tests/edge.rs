//! Nothing is created on an edge that is not ready, and an unreachable edge mid-attempt
//! loses no record.

use super::*;

#[rstest]
#[case::missing(EdgeState::Missing, "EdgeNotReady", Next::After(60))]
#[case::unprobed(EdgeState::Unprobed, "EdgeNotReady", Next::After(2))]
#[case::not_ready(EdgeState::NotReady("not probed".into()), "EdgeNotReady", Next::After(60))]
#[case::unreachable(EdgeState::Unreachable("connection refused".into()), "EdgeUnreachable", Next::Backoff)]
fn edge_not_ready_blocks_creation(
    #[case] edge: EdgeState,
    #[case] reason: &str,
    #[case] next: Next,
) {
    let ws = workspace(Some(plan(1)), None);
    let mut case = Case::new(&ws);
    case.edge = edge;
    case.edge_objects = None;
    let decision = case.decide();
    assert_eq!(edge_actions(&decision), 0, "{reason}");
    assert_eq!(decision.next, next, "{reason}");
    let status = last_status(&decision);
    assert_eq!(
        status.attempt,
        Some(1),
        "{reason}: bound, so the attempt is pinned"
    );
    assert!(status.preparation.is_none(), "{reason}: nothing prepared");
    assert_eq!(status.phase, Some(Phase::Pending), "{reason}");
    assert_eq!(condition(&status, "Ready"), ("False".into(), reason.into()));
    assert_eq!(
        condition(&status, "Progressing"),
        ("False".into(), reason.into())
    );
}

#[test]
fn edge_unreachable_mid_attempt_keeps_the_record() {
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Unreachable("connection refused".into());
    case.edge_objects = None;
    let decision = case.decide();
    assert_eq!(edge_actions(&decision), 0);
    assert_eq!(decision.next, Next::Backoff);
    let status = last_status(&decision);
    assert_eq!(status.job_uid.as_deref(), Some("job-uid"));
    assert_eq!(status.phase, Some(Phase::Progressing));
    assert_eq!(condition(&status, "Progressing").1, "EdgeUnreachable");
}
