//! One attempt at a time: a retry starts exactly one new attempt, an older attempt finishes
//! first, an unstarted one is superseded, a release left pending is recovered.

use super::*;

#[test]
fn retry_starts_exactly_one_new_attempt() {
    let mut done = bound(1, Some("job-uid"));
    done.job_result = Some(JobResult::Failed);
    done.cleaned_up = true;
    done.attempts = vec![crate::api::AttemptRecord {
        attempt: 1,
        attempt_id: "a1".into(),
        version: "0.1.0".into(),
        owner: "alice".into(),
        job: plan(1).job,
        result: Some(JobResult::Failed),
        finished_at: Some(Time(now())),
        message: None,
        cause: None,
        restores: None,
        kept: None,
    }];
    let ws = workspace(Some(plan(2)), Some(done));
    let mut case = Case::new(&ws);
    // The namespace stays from attempt 1; attempt 2's objects do not exist yet.
    case.edge_objects = Some(EdgeObjects {
        namespace: Some(namespace_of(UID)),
        ..Default::default()
    });
    let decision = case.decide();
    let status = last_status(&decision);
    assert_eq!(status.attempt, Some(2));
    assert_eq!(status.job_result, None);
    assert_eq!(status.attempts.len(), 2);
    let jobs: Vec<_> = decision
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Create(o) => match &**o {
                EdgeObject::Job(job) => job.metadata.name.clone(),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(jobs, [plan(2).job]);
}

#[test]
fn older_attempt_finishes_first() {
    let mut old = bound(1, Some("job-uid"));
    old.job_result = Some(JobResult::Failed);
    let ws = workspace(Some(plan(2)), Some(old));
    let mut case = Case::new(&ws);
    let mut edge_objects = prepared(1);
    edge_objects.job = Some(job(1, failed(), true));
    case.edge_objects = Some(edge_objects);
    let decision = case.decide();
    assert!(!events(&decision).contains(&"AttemptStarted"));
    assert!(!steps(&decision).contains(&"create-job"));
    assert!(steps(&decision).contains(&"delete-service-account"));
    // While attempt 1's Job runs, attempt 2 waits for it.
    let running = bound(1, Some("job-uid"));
    let ws = workspace(Some(plan(2)), Some(running));
    let mut case = Case::new(&ws);
    let mut edge_objects = prepared(1);
    edge_objects.job = Some(job(1, JobOutcome::Running, true));
    case.edge_objects = Some(edge_objects);
    let decision = case.decide();
    assert_eq!(edge_actions(&decision), 0);
    assert_eq!(
        condition(&last_status(&decision), "Progressing").1,
        "WaitingForPreviousAttempt"
    );
}

#[test]
fn unstarted_attempt_is_superseded() {
    let ws = workspace(Some(plan(2)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(prepared(1));
    let decision = case.decide();
    let status = last_status(&decision);
    assert_eq!(status.attempt, Some(1));
    assert_eq!(status.job_result, Some(JobResult::Rejected));
    assert_eq!(condition(&status, "Failed").1, "Superseded");
    assert!(steps(&decision).contains(&"delete-service-account"));
}

#[test]
fn pending_release_is_recovered() {
    let ws = workspace(Some(plan(2)), Some(bound(2, None)));
    let mut case = Case::new(&ws);
    let mut edge_objects = prepared(2);
    edge_objects.release = Some(ReleaseRevision {
        modified: None,
        secret: "sh.helm.release.v1.hello.v1".into(),
        uid: "rel-uid".into(),
        revision: 1,
        status: "pending-install".into(),
        created: None,
    });
    case.edge_objects = Some(edge_objects.clone());
    let decision = case.decide();
    assert_eq!(edge_steps(&decision), ["mark-release-failed", "create-job"]);
    assert!(events(&decision).contains(&"ReleaseRecovered"));
    edge_objects.release.as_mut().unwrap().status = "failed".into();
    case.edge_objects = Some(edge_objects);
    assert_eq!(
        edge_steps(&case.decide()),
        ["create-job"],
        "a failed release is left to Helm"
    );
}
