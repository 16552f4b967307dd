//! The Job's result is recorded before its identity is revoked, and cleanup is recorded
//! last, so a crash between steps repeats nothing harmful.

use super::*;

#[rstest]
#[case::succeeded(JobOutcome::Succeeded, JobResult::Succeeded, "False")]
#[case::failed(failed(), JobResult::Failed, "True")]
fn job_result_is_recorded_before_revocation(
    #[case] outcome: JobOutcome,
    #[case] result: JobResult,
    #[case] failed_condition: &str,
) {
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    let mut case = Case::new(&ws);
    let mut edge_objects = prepared(1);
    edge_objects.job = Some(job(1, outcome, true));
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
            "write-status"
        ],
        "{result:?}: result first, then identity, then the Job's finalizer, cleanup last"
    );
    let writes: Vec<&WorkspaceStatus> = decision
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::WriteStatus(status) => Some(&**status),
            _ => None,
        })
        .collect();
    let first = writes[0];
    assert_eq!(first.job_result, Some(result));
    assert!(first.finished_at.is_some());
    assert!(!first.cleaned_up);
    assert_eq!(first.attempts[0].result, Some(result));
    assert_eq!(condition(first, "Failed").0, failed_condition);
    assert_eq!(condition(first, "Ready").0, "False", "not before cleanup");
    let last = writes[1];
    assert!(last.cleaned_up, "recorded after revocation and release");
    // A succeeded install is checked for drift at once (its objects followed from then).
    let next = if result == JobResult::Succeeded {
        Next::Continue
    } else {
        Next::Idle
    };
    assert_eq!(decision.next, next);
}

/// Rule `revocation_is_decided_from_a_live_read`: decided from a watch cache, the cleanup
/// stops after the result's write; taken again from the Workspace that write returns (the
/// API server's answer, a live read), it revokes, with no second Event.
#[rstest]
#[case::succeeded(JobOutcome::Succeeded, "JobSucceeded")]
#[case::failed(failed(), "JobFailed")]
fn revocation_is_decided_again_from_the_answer_to_the_result_write(
    #[case] outcome: JobOutcome,
    #[case] event: &str,
) {
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    let mut edge_objects = prepared(1);
    edge_objects.job = Some(job(1, outcome, true));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(edge_objects.clone());
    let whole = case.decide();
    let decision = whole
        .cut_at_live_read()
        .expect("a write of the Workspace comes first");
    assert!(
        whole.revokes_or_deletes(),
        "the whole decision is left as it was"
    );
    assert_eq!(steps(&decision), ["write-status"]);
    assert_eq!(events(&decision), [event]);
    assert!(!decision.revokes_or_deletes());
    assert_eq!(
        decision.next,
        Next::Continue,
        "decide again from the answer"
    );

    let written = Workspace {
        status: Some(last_status(&decision)),
        ..ws.clone()
    };
    let mut case = Case::new(&written);
    case.edge_objects = Some(edge_objects);
    let again = case.decide();
    assert_eq!(
        steps(&again),
        [
            "delete-service-account",
            "delete-role",
            "delete-role-binding",
            "delete-values-secret",
            "release-job",
            "write-status"
        ]
    );
    assert!(
        events(&again).is_empty(),
        "the result's Event went out once"
    );
    assert_eq!(
        again.cut_at_live_read(),
        None,
        "nothing writes the Workspace before the first revocation: the shell must have it live"
    );
    assert_eq!(again.actions.len(), 6, "not cut");
}

#[test]
fn cleanup_is_recorded_last() {
    let mut status = bound(1, Some("job-uid"));
    status.job_result = Some(JobResult::Succeeded);
    status.finished_at = Some(Time(now()));
    let ws = workspace(Some(plan(1)), Some(status));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(EdgeObjects {
        namespace: Some(namespace_of(UID)),
        job: Some(job(1, JobOutcome::Succeeded, false)),
        ..Default::default()
    });
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status"]);
    let status = last_status(&decision);
    assert!(status.cleaned_up);
    assert_eq!(status.phase, Some(Phase::Succeeded));
    assert_eq!(
        condition(&status, "Ready"),
        ("True".into(), "Installed".into())
    );
    assert_eq!(condition(&status, "Progressing").0, "False");
    assert_eq!(
        decision.next,
        Next::Continue,
        "the drift check follows at once"
    );
}

/// Rule `earlier_attempts_jobs_are_removed`: once an attempt's result is recorded, the
/// Jobs of the Workspace's earlier attempts go (released first when they hold the
/// finalizer); the recorded attempt's own Job stays, and another Workspace's is never
/// touched.
#[test]
fn cleanup_removes_the_jobs_of_earlier_attempts() {
    let mut status = bound(3, Some("job-uid"));
    status.job_result = Some(JobResult::Succeeded);
    status.finished_at = Some(Time(now()));
    let ws = workspace(Some(plan(3)), Some(status));
    let mut case = Case::new(&ws);
    let mut earlier = object("job-1-uid", UID, "attempt-1", "");
    earlier.finalizers = vec![names::FINALIZER.into()];
    case.edge_objects = Some(EdgeObjects {
        namespace: Some(namespace_of(UID)),
        job: Some(job(3, JobOutcome::Succeeded, false)),
        earlier_jobs: vec![
            ("demo-job-1".into(), earlier),
            (
                "demo-job-2".into(),
                object("job-2-uid", UID, "attempt-2", ""),
            ),
            (
                "theirs".into(),
                object("their-job-uid", "uid-someone-else", "their-attempt", ""),
            ),
        ],
        ..Default::default()
    });
    let decision = case.decide();
    let deleted = deleted_jobs(&decision);
    assert_eq!(
        deleted,
        [
            ("demo-job-1".to_owned(), "job-1-uid".to_owned()),
            ("demo-job-2".to_owned(), "job-2-uid".to_owned())
        ],
        "only the earlier attempts' Jobs of this Workspace go, by UID"
    );
    let released = released_jobs(&decision);
    assert_eq!(
        released,
        ["demo-job-1"],
        "a held Job is released before it goes"
    );
    assert!(
        last_status(&decision).cleaned_up,
        "recorded last, as before"
    );
}

#[test]
fn crash_between_cleanup_steps_repeats_nothing_harmful() {
    let mut recorded = bound(1, Some("job-uid"));
    recorded.job_result = Some(JobResult::Succeeded);
    recorded.finished_at = Some(Time(now()));
    let mut partly_revoked = prepared(1);
    partly_revoked.service_account = None;
    partly_revoked.role = None;
    partly_revoked.job = Some(job(1, JobOutcome::Succeeded, true));
    let mut revoked = EdgeObjects {
        namespace: Some(namespace_of(UID)),
        ..Default::default()
    };
    revoked.job = Some(job(1, JobOutcome::Succeeded, true));
    let rows: [(&str, EdgeObjects, &[&str]); 2] = [
        (
            "after the result, mid-revocation",
            partly_revoked,
            &["delete-role-binding", "delete-values-secret", "release-job"],
        ),
        ("after revocation", revoked, &["release-job"]),
    ];
    for (row, edge_objects, expected) in rows {
        let ws = workspace(Some(plan(1)), Some(recorded.clone()));
        let mut case = Case::new(&ws);
        case.edge_objects = Some(edge_objects);
        let decision = case.decide();
        let got: Vec<_> = steps(&decision)
            .into_iter()
            .filter(|s| *s != "write-status")
            .collect();
        assert_eq!(got, expected, "{row}");
        assert!(
            !decision
                .actions
                .iter()
                .any(|a| a.name().starts_with("create")),
            "{row}: nothing is created again"
        );
    }
}

/// Rule `each_attempt_has_its_own_events`: the same reason in two attempts makes two
/// Events, not one series that keeps the first attempt's message.
#[test]
fn each_attempt_has_its_own_events() {
    let actions_of = |attempt: i64| {
        let ws = workspace(Some(plan(attempt)), Some(bound(attempt, Some("job-uid"))));
        let mut case = Case::new(&ws);
        let mut edge_objects = prepared(attempt);
        edge_objects.job = Some(job(attempt, JobOutcome::Succeeded, true));
        case.edge_objects = Some(edge_objects);
        case.decide()
            .actions
            .into_iter()
            .filter_map(|a| match a {
                Action::Event(note) => Some((note.reason, note.action)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        actions_of(1),
        [("JobSucceeded", Some("Attempt1".to_owned()))]
    );
    assert_eq!(
        actions_of(2),
        [("JobSucceeded", Some("Attempt2".to_owned()))]
    );
}

/// Rule `kept_plans_are_bounded`: a succeeded attempt keeps its plan for a rollback, and the
/// kept plans stay within rollback_history in count and KEPT_PLANS_BYTES in bytes, newest
/// first.
#[rstest]
#[case::small_identities(0, 10)]
#[case::large_identities(20 * 1024, 7)]
fn kept_plans_are_bounded_in_count_and_bytes(#[case] groups_bytes: usize, #[case] expected: usize) {
    let earlier: Vec<crate::api::AttemptRecord> = (1..=11)
        .map(|attempt| {
            let mut plan = plan(attempt);
            plan.owner.groups = vec!["g".repeat(groups_bytes)];
            let record = bound(attempt, None).attempts.remove(0);
            crate::api::AttemptRecord {
                result: Some(JobResult::Succeeded),
                kept: Some(crate::api::KeptPlan {
                    version: None,
                    values: None,
                    plan: SealedPlan {
                        plan,
                        seal: Seal {
                            key_id: "k".into(),
                            algorithm: "Ed25519".into(),
                            signature: "s".into(),
                        },
                    },
                }),
                ..record
            }
        })
        .collect();
    let mut status = bound(12, Some("job-uid"));
    status.attempts.splice(0..0, earlier);
    let ws = workspace(Some(plan(12)), Some(status));
    let mut case = Case::new(&ws);
    let mut edge_objects = prepared(12);
    edge_objects.job = Some(job(12, JobOutcome::Succeeded, true));
    case.edge_objects = Some(edge_objects);
    let status = last_status(&case.decide());
    let kept: Vec<i64> = status
        .attempts
        .iter()
        .filter(|r| r.kept.is_some())
        .map(|r| r.attempt)
        .collect();
    let newest: Vec<i64> = (13 - expected as i64..=12).collect();
    assert_eq!(kept, newest, "the newest {expected}");
    let bytes: usize = status
        .attempts
        .iter()
        .filter_map(|r| r.kept.as_ref())
        .map(|k| serde_json::to_vec(k).unwrap().len())
        .sum();
    assert!(bytes <= crate::installer::KEPT_PLANS_BYTES, "{bytes}");
}
