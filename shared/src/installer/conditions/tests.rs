//! The conditions a Workspace shows for each state of its attempt.

use super::*;

#[test]
fn transition_time_moves_only_when_the_status_changes() {
    let mut status = WorkspaceStatus::default();
    let t0 = Timestamp::from_second(1_000).unwrap();
    let t1 = Timestamp::from_second(2_000).unwrap();
    settle(
        &mut status,
        Some(1),
        t0,
        &Activity::busy(reason::PREPARING, "a"),
        None,
    );
    settle(
        &mut status,
        Some(1),
        t1,
        &Activity::busy(reason::JOB_RUNNING, "b"),
        None,
    );
    let progressing = status
        .conditions
        .iter()
        .find(|c| c.type_ == PROGRESSING)
        .unwrap();
    assert_eq!(progressing.last_transition_time, Time(t0));
    assert_eq!(progressing.reason, reason::JOB_RUNNING);
    settle(
        &mut status,
        Some(1),
        t1,
        &Activity::idle(reason::INSTALLED, "c"),
        None,
    );
    let progressing = status
        .conditions
        .iter()
        .find(|c| c.type_ == PROGRESSING)
        .unwrap();
    assert_eq!(progressing.last_transition_time, Time(t1));
}

fn status_of(status: &WorkspaceStatus, kind: &str) -> String {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

fn settled(
    job_result: Option<JobResult>,
    cleaned_up: bool,
    activity: Activity,
    failure: Option<Failure>,
) -> WorkspaceStatus {
    let mut status = WorkspaceStatus {
        job_result,
        cleaned_up,
        ..WorkspaceStatus::default()
    };
    let now = Timestamp::from_second(1_000).unwrap();
    settle(&mut status, Some(3), now, &activity, failure.as_ref());
    status
}

#[test]
fn a_running_attempt_reads_as_reconciling() {
    let status = settled(
        None,
        false,
        Activity::busy(reason::JOB_RUNNING, "helm"),
        None,
    );
    assert_eq!(status_of(&status, RECONCILING), "True");
    assert_eq!(status_of(&status, STALLED), "", "absent while False");
    assert_eq!(status_of(&status, READY), "False");
}

#[test]
fn a_waiting_workspace_reads_as_reconciling_not_stalled() {
    // Waiting on the edge is not a failure: kstatus keeps it InProgress.
    let status = settled(
        None,
        false,
        Activity::idle(reason::EDGE_UNREACHABLE, "edge-1 does not answer"),
        None,
    );
    assert_eq!(status_of(&status, RECONCILING), "True");
    assert_eq!(status_of(&status, STALLED), "", "absent while False");
}

#[test]
fn a_result_not_yet_cleaned_up_is_still_reconciling() {
    let status = settled(
        Some(JobResult::Succeeded),
        false,
        Activity::busy(reason::CLEANING_UP, "revoking"),
        None,
    );
    assert_eq!(status_of(&status, RECONCILING), "True");
    assert_eq!(status_of(&status, READY), "False");
}

#[test]
fn an_installed_workspace_is_neither_reconciling_nor_stalled() {
    // Both are absent: kstatus reads an absent one as False.
    let status = settled(
        Some(JobResult::Succeeded),
        true,
        Activity::idle(reason::INSTALLED, "installed"),
        None,
    );
    assert_eq!(status_of(&status, READY), "True");
    assert_eq!(status_of(&status, RECONCILING), "", "absent while False");
    assert_eq!(status_of(&status, STALLED), "", "absent while False");
    assert_eq!(status.observed_generation, Some(3));
}

#[test]
fn a_failed_attempt_is_stalled_with_its_reason() {
    let failure = Failure::new(reason::JOB_FAILED, "helm exited 1");
    let status = settled(
        Some(JobResult::Failed),
        true,
        Activity::idle(reason::JOB_FAILED, "helm exited 1"),
        Some(failure),
    );
    assert_eq!(status_of(&status, STALLED), "True");
    assert_eq!(status_of(&status, RECONCILING), "", "absent while False");
    let stalled = status
        .conditions
        .iter()
        .find(|c| c.type_ == STALLED)
        .unwrap();
    assert_eq!(stalled.reason, reason::JOB_FAILED);
    assert_eq!(stalled.message, "helm exited 1");
}

#[test]
fn reconciling_goes_once_installed_and_stalled_comes_with_a_failure() {
    let mut status = WorkspaceStatus::default();
    let now = Timestamp::from_second(1_000).unwrap();
    let types = |status: &WorkspaceStatus| -> Vec<String> {
        status.conditions.iter().map(|c| c.type_.clone()).collect()
    };
    settle(
        &mut status,
        Some(1),
        now,
        &Activity::busy(reason::JOB_RUNNING, "helm"),
        None,
    );
    assert_eq!(types(&status), [READY, PROGRESSING, FAILED, RECONCILING]);
    status.job_result = Some(JobResult::Succeeded);
    status.cleaned_up = true;
    settle(
        &mut status,
        Some(1),
        now,
        &Activity::idle(reason::INSTALLED, "installed"),
        None,
    );
    assert_eq!(types(&status), [READY, PROGRESSING, FAILED]);
    status.job_result = Some(JobResult::Failed);
    let failure = Failure::new(reason::JOB_FAILED, "helm exited 1");
    settle(
        &mut status,
        Some(2),
        now,
        &Activity::idle(reason::JOB_FAILED, "helm exited 1"),
        Some(&failure),
    );
    assert_eq!(types(&status), [READY, PROGRESSING, FAILED, STALLED]);
}
