//! What a lost Workspace of the same name left on the edge (a restored hub, ADR 41) makes
//! the attempt wait for the orphan sweep; the same marks of another name are refused.

use super::*;

/// Marks of the installer for `org-a/demo` (this Workspace's name) and another UID.
fn lost(uid: &str, attempt_id: &str) -> ObjectState {
    object(uid, OTHER_UID, attempt_id, "p0")
}

fn waits_for_the_sweep(decision: &Decision, row: &str) {
    assert_eq!(edge_actions(decision), 0, "{row}: nothing on the edge");
    let status = last_status(decision);
    assert_eq!(
        status.job_result, None,
        "{row}: no result, the attempt waits"
    );
    assert_eq!(
        condition(&status, "Progressing"),
        ("False".into(), "WaitingForOrphanSweep".into()),
        "{row}"
    );
    let message = &status.condition("Ready").expect("Ready").message;
    assert!(
        message.contains("org-a/demo")
            && message.contains(OTHER_UID)
            && message.contains("orphan sweep"),
        "{row}: {message}"
    );
    assert_eq!(decision.next, Next::After(15), "{row}");
}

#[test]
fn a_lost_namesakes_namespace_job_or_identity_waits_for_the_sweep() {
    let mut ns = namespace_of(OTHER_UID);
    ns.uid = "old-ns".into();
    let mut with_namespace = EdgeObjects {
        namespace: Some(ns),
        ..Default::default()
    };
    let mut with_job = EdgeObjects {
        namespace: Some(namespace_of(UID)),
        ..Default::default()
    };
    with_job.job = Some(JobState {
        object: lost("old-job", "a-old"),
        outcome: JobOutcome::Succeeded,
        finished_at: Some(Time(now())),
        runner: None,
    });
    let mut with_identity = EdgeObjects {
        namespace: Some(namespace_of(UID)),
        ..Default::default()
    };
    with_identity.service_account = Some(lost("old-sa", "a-old"));
    with_namespace.values = None;
    for (row, edge_objects) in [
        ("namespace", with_namespace),
        ("Job", with_job),
        ("runner ServiceAccount", with_identity),
    ] {
        let mut status = bound(1, None);
        status.namespace_admission_known = false;
        status.namespace_admitted = false;
        status.namespace_uid = None;
        let ws = workspace(Some(plan(1)), Some(status));
        let mut case = Case::new(&ws);
        case.edge_objects = Some(edge_objects);
        waits_for_the_sweep(&case.decide(), row);
    }
}

#[test]
fn the_same_marks_without_the_installers_label_or_of_another_name_are_refused() {
    let mut unmanaged = namespace_of(OTHER_UID);
    unmanaged.labels.remove(names::LABEL_MANAGED_BY);
    let mut other_org = namespace_of(OTHER_UID);
    other_org
        .annotations
        .insert(names::ANNOTATION_WORKSPACE.into(), "org-b/demo".into());
    for (row, ns) in [
        ("not the installer's", unmanaged),
        ("another organization's name", other_org),
    ] {
        let ws = workspace(Some(plan(1)), Some(bound(1, None)));
        let mut case = Case::new(&ws);
        case.edge_objects = Some(EdgeObjects {
            namespace: Some(ns),
            ..Default::default()
        });
        let status = last_status(&case.decide());
        assert_eq!(status.job_result, Some(JobResult::Rejected), "{row}");
        assert_eq!(
            condition(&status, "Failed").1,
            "NamespaceNotAdmitted",
            "{row}"
        );
    }
}

#[test]
fn a_job_with_the_marks_of_this_name_but_no_attempt_is_refused_as_before() {
    // The sweep removes only an attempt's objects: a Job without an attempt ID (not one the
    // installer made) would never go, so it is refused instead of waited for.
    let mut planted = lost("planted-job", "");
    planted.labels.remove(names::LABEL_ATTEMPT_ID);
    let mut edge_objects = EdgeObjects {
        namespace: Some(namespace_of(UID)),
        ..Default::default()
    };
    edge_objects.job = Some(JobState {
        object: planted,
        outcome: JobOutcome::Running,
        finished_at: None,
        runner: None,
    });
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(edge_objects);
    let status = last_status(&case.decide());
    assert_eq!(status.job_result, Some(JobResult::Rejected));
    assert_eq!(condition(&status, "Failed").1, "JobConflict");
}

#[test]
fn once_released_by_the_sweep_the_namespace_is_adopted_by_the_restored_workspace() {
    let mut ns = namespace_of(OTHER_UID);
    ns.labels
        .insert(names::LABEL_RELEASED.into(), "true".into());
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(EdgeObjects {
        namespace: Some(ns),
        ..Default::default()
    });
    let decision = case.decide();
    assert!(
        steps(&decision).contains(&"adopt-namespace"),
        "{:?}",
        steps(&decision)
    );
    assert!(events(&decision).contains(&"NamespaceAdopted"));
}

/// A lost namesake's runner object already being deleted, but held by a finalizer that is
/// not the installer's, is skipped by the sweep: the attempt does not wait for it (that
/// wait would never end) but is refused, naming it.
#[test]
fn a_lost_namesakes_object_held_in_deletion_is_refused_not_waited_for() {
    let mut held = lost("old-sa", "a-old");
    held.deleting = true;
    held.finalizers = vec!["example.com/keep".into()];
    let mut edge_objects = EdgeObjects {
        namespace: Some(namespace_of(UID)),
        ..Default::default()
    };
    edge_objects.service_account = Some(held);
    let mut status = bound(1, None);
    status.namespace_admission_known = false;
    status.namespace_admitted = false;
    status.namespace_uid = None;
    let ws = workspace(Some(plan(1)), Some(status));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(edge_objects);
    let decision = case.decide();
    let status = last_status(&decision);
    assert_ne!(
        condition(&status, "Progressing").1,
        "WaitingForOrphanSweep",
        "no endless wait"
    );
    assert_eq!(condition(&status, "Failed").1, "JobConflict");
}
