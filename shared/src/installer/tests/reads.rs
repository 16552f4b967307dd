//! The installer reads from the edge only what the next step needs.

use super::*;

#[test]
fn settled_workspace_needs_only_its_release_from_the_edge_cache() {
    let mut done = bound(1, Some("job-uid"));
    done.job_result = Some(JobResult::Succeeded);
    done.cleaned_up = true;
    let ws = workspace(Some(plan(1)), Some(done.clone()));
    let installed = attempt_reads(&ws).expect("an installed release is watched for drift");
    assert!(installed.installed && !installed.authorize && installed.credential.is_none());
    assert_eq!(installed.release.as_deref(), Some("hello"));
    done.job_result = Some(JobResult::Failed);
    assert_eq!(
        attempt_reads(&workspace(Some(plan(1)), Some(done))),
        None,
        "a failed attempt needs nothing"
    );
    let mut case = Case::new(&ws);
    case.edge_objects = None;
    case.edge = EdgeState::Unreachable("down".into());
    let first = case.decide();
    let settled = Workspace {
        status: Some(last_status(&first)),
        ..ws.clone()
    };
    let mut case = Case::new(&settled);
    case.edge_objects = None;
    assert!(
        case.decide().actions.is_empty(),
        "a settled Workspace writes nothing"
    );
}

#[test]
fn focus_reads_what_the_step_needs() {
    let ws = workspace(Some(plan(2)), Some(bound(2, None)));
    let f = attempt_reads(&ws).unwrap();
    assert_eq!(f.names.job, plan(2).job);
    assert_eq!(
        f.release.as_deref(),
        Some("hello"),
        "preparing: read Helm's records"
    );
    let mut old = bound(1, Some("j"));
    old.job_result = Some(JobResult::Failed);
    let ws = workspace(Some(plan(2)), Some(old));
    let f = attempt_reads(&ws).unwrap();
    assert_eq!(f.attempt, 1, "the unfinished older attempt first");
    assert_eq!(f.release, None);
    assert!(
        !f.job_first,
        "a result is recorded: cleanup reads everything"
    );
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    assert!(
        attempt_reads(&ws).unwrap().job_first,
        "a running Job is all a decision needs"
    );
}

#[test]
fn running_job_needs_nothing_else() {
    // The shell reads only the Job while it runs; the decision must not need more.
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(EdgeObjects {
        job: Some(job(1, JobOutcome::Running, true)),
        ..Default::default()
    });
    let decision = case.decide();
    assert_eq!(edge_actions(&decision), 0);
    assert_eq!(decision.next, Next::After(300));
}
