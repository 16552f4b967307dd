//! Deleting a Workspace revokes only its own identity on the edge, and never touches
//! another Workspace's objects.

use super::*;

#[test]
fn deletion_revokes_only_the_identity() {
    let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    let mut case = Case::new(&ws);
    let mut edge_objects = prepared(1);
    edge_objects.job = Some(job(1, JobOutcome::Running, true));
    edge_objects.runtime_credential = Some(object("cred", UID, "", ""));
    case.edge_objects = Some(edge_objects);
    let decision = case.decide();
    assert_eq!(
        steps(&decision),
        [
            "write-status",
            "delete-service-account",
            "delete-role",
            "delete-role-binding",
            "delete-values-secret",
            "release-job",
            "delete-job",
            "release-namespace",
            "remove-finalizer"
        ]
    );
    let status = last_status(&decision);
    assert!(status.deleting, "fenced first");
    assert_eq!(status.phase, Some(Phase::Deleting));
}

/// Rule `deletion_removes_every_attempts_job`: the Jobs of earlier attempts, kept after
/// their results, go with the Workspace (a Workspace created later under its name makes
/// Jobs of the same names); a Job of another Workspace beside them stays.
#[test]
fn deletion_removes_the_jobs_of_earlier_attempts_and_only_its_own() {
    let mut ws = workspace(Some(plan(3)), Some(bound(3, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    let mut case = Case::new(&ws);
    let mut edge_objects = prepared(3);
    edge_objects.job = Some(job(3, JobOutcome::Succeeded, true));
    let mut earlier = object("job-1-uid", UID, "attempt-1", "");
    earlier.finalizers = vec![names::FINALIZER.into()];
    edge_objects.earlier_jobs = vec![
        ("demo-job-1".into(), earlier),
        (
            "demo-job-2".into(),
            object("job-2-uid", UID, "attempt-2", ""),
        ),
        (
            "theirs".into(),
            object("their-job-uid", "uid-someone-else", "their-attempt", ""),
        ),
    ];
    case.edge_objects = Some(edge_objects);
    let decision = case.decide();
    let deleted = deleted_jobs(&decision);
    assert!(
        deleted.contains(&("demo-job-1".into(), "job-1-uid".into()))
            && deleted.contains(&("demo-job-2".into(), "job-2-uid".into())),
        "the earlier attempts' Jobs are deleted, by UID: {deleted:?}"
    );
    assert!(
        !deleted.iter().any(|(name, _)| name == "theirs"),
        "another Workspace's Job is never touched: {deleted:?}"
    );
    let released = released_jobs(&decision);
    assert!(
        released.contains(&"demo-job-1"),
        "a kept Job's finalizer is removed before it is deleted: {released:?}"
    );
    assert_eq!(steps(&decision).last(), Some(&"remove-finalizer"));
}

#[test]
fn deletion_waits_for_a_reachable_edge() {
    let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Unreachable("connection refused".into());
    case.edge_objects = None;
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status"]);
    assert_eq!(decision.next, Next::Backoff);
    assert!(last_status(&decision).deleting);
}

#[test]
fn deletion_with_nothing_prepared_finishes_without_the_edge() {
    // Bound, but the edge never became Ready: no preparation, no Job, no namespace seen.
    let mut status = bound(1, None);
    status.preparation = None;
    status.namespace_uid = None;
    let mut ws = workspace(Some(plan(1)), Some(status));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    assert!(
        attempt_reads(&ws).is_none(),
        "nothing is read from the edge"
    );
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Unreachable("connection refused".into());
    case.edge_objects = None;
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status", "remove-finalizer"]);
    assert!(events(&decision).contains(&"NothingToClean"));
}

#[test]
fn deletion_abandoned_by_the_platform_finishes_without_the_edge() {
    let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    ws.metadata.annotations = Some(BTreeMap::from([(
        names::ANNOTATION_ABANDON.to_owned(),
        "edge-1 was decommissioned (ticket 42)".to_owned(),
    )]));
    assert!(
        attempt_reads(&ws).is_none(),
        "nothing is read from the edge"
    );
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Unreachable("connection refused".into());
    case.edge_objects = None;
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status", "remove-finalizer"]);
    let note = decision
        .actions
        .iter()
        .find_map(|a| match a {
            Action::Event(note) if note.reason == "Abandoned" => Some(note.message.clone()),
            _ => None,
        })
        .expect("an Abandoned Event");
    assert!(note.contains("ticket 42"), "{note}");
}

#[test]
fn deletion_of_an_unregistered_edge_goes_on() {
    let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Missing;
    case.edge_objects = None;
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status", "remove-finalizer"]);
    assert!(events(&decision).contains(&"EdgeGone"));
}

#[test]
fn deletion_without_our_finalizer_writes_nothing() {
    let mut ws = workspace(Some(plan(1)), Some(bound(1, None)));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    ws.metadata.finalizers = None;
    assert!(Case::new(&ws).decide().actions.is_empty());
}

#[test]
fn another_workspaces_objects_are_never_touched() {
    // A same-name replacement (UID_1) sees what its deleted predecessor (UID_0) left.
    let theirs = EdgeObjects {
        namespace: Some(namespace_of(OTHER_UID)),
        service_account: Some(object("sa", OTHER_UID, "a1", "p1")),
        role: Some(object("role", OTHER_UID, "a1", "p1")),
        role_binding: Some(object("rb", OTHER_UID, "a1", "p1")),
        values: Some(object("values", OTHER_UID, "a1", "p1")),
        job: Some(JobState {
            object: object("job", OTHER_UID, "a1", "p1"),
            outcome: JobOutcome::Running,
            finished_at: None,
            runner: None,
        }),
        ..Default::default()
    };
    let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(theirs.clone());
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status", "remove-finalizer"]);

    let mut result = bound(1, Some("job-uid"));
    result.job_result = Some(JobResult::Succeeded);
    let ws = workspace(Some(plan(1)), Some(result));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(theirs);
    let decision = case.decide();
    assert_eq!(
        edge_actions(&decision),
        0,
        "cleanup touches only this Workspace's objects"
    );
}

/// Rule `released_says_whose_namespace_it_was`: the Released Event keeps a namespace "for
/// a later Workspace" only when it is this Workspace's; of another's it says it was never
/// this Workspace's.
#[test]
fn released_says_whose_namespace_it_was() {
    let released = |edge_objects: EdgeObjects| {
        let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
        ws.metadata.deletion_timestamp = Some(Time(now()));
        let mut case = Case::new(&ws);
        case.edge_objects = Some(edge_objects);
        case.decide()
            .actions
            .iter()
            .find_map(|a| match a {
                Action::Event(note) if note.reason == "Released" => Some(note.message.clone()),
                _ => None,
            })
            .expect("a Released Event")
    };
    let own = released(prepared(1));
    assert!(own.contains("left in place for a later Workspace"), "{own}");
    let theirs = released(EdgeObjects {
        namespace: Some(namespace_of(OTHER_UID)),
        ..Default::default()
    });
    assert!(
        theirs.contains("was never this Workspace's") && !theirs.contains("later Workspace"),
        "{theirs}"
    );
}
