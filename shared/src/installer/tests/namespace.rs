//! The target namespace is created and recorded, adopted when released, refused when
//! someone else's; an expired preparation is redone.

use super::*;

#[test]
fn namespace_is_created_and_recorded() {
    let mut status = bound(1, None);
    status.namespace_admission_known = false;
    status.namespace_admitted = false;
    status.namespace_uid = None;
    let ws = workspace(Some(plan(1)), Some(status));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(EdgeObjects {
        namespace: Some(namespace_of(UID)),
        ..Default::default()
    });
    let decision = case.decide();
    assert_eq!(
        steps(&decision),
        [
            "write-status",
            "create-service-account",
            "create-role",
            "create-role-binding",
            "create-job"
        ]
    );
    let status = last_status(&decision);
    assert!(status.namespace_admission_known && status.namespace_admitted);
    assert_eq!(status.namespace_uid.as_deref(), Some("ns-uid"));
}

#[test]
fn namespace_of_someone_else_is_refused() {
    let mut unlabelled = namespace_of(UID);
    unlabelled.labels.clear();
    unlabelled.annotations.clear();
    let mut released_elsewhere = namespace_of(OTHER_UID);
    released_elsewhere
        .labels
        .insert(names::LABEL_RELEASED.into(), "true".into());
    released_elsewhere
        .annotations
        .insert(names::ANNOTATION_WORKSPACE.into(), "org-a/another".into());
    let mut another = namespace_of(OTHER_UID);
    another
        .annotations
        .insert(names::ANNOTATION_WORKSPACE.into(), "org-b/demo".into());
    let rows = [
        ("no ownership label", unlabelled),
        ("another Workspace's", another),
        (
            "released by a Workspace of another name",
            released_elsewhere,
        ),
    ];
    for (row, ns) in rows {
        let ws = workspace(Some(plan(1)), Some(bound(1, None)));
        let mut case = Case::new(&ws);
        case.edge_objects = Some(EdgeObjects {
            namespace: Some(ns),
            ..Default::default()
        });
        let decision = case.decide();
        assert_eq!(
            steps(&decision),
            ["write-status"],
            "{row}: no Job, nothing created"
        );
        let status = last_status(&decision);
        assert_eq!(status.job_result, Some(JobResult::Rejected), "{row}");
        assert!(
            status.namespace_admission_known && !status.namespace_admitted,
            "{row}"
        );
        assert_eq!(
            condition(&status, "Failed"),
            ("True".into(), "NamespaceNotAdmitted".into()),
            "{row}"
        );
        assert!(status.cleaned_up, "{row}");
    }
}

#[test]
fn released_namespace_is_adopted() {
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
    assert_eq!(steps(&decision), ["write-status", "adopt-namespace"]);
    let Some(Action::PatchNamespace { patch, .. }) = decision
        .actions
        .iter()
        .find(|a| a.name() == "adopt-namespace")
    else {
        panic!("adopt")
    };
    let text = serde_json::to_string(patch).unwrap();
    assert!(text.contains(OTHER_UID) && text.contains(UID), "{text}");
}

#[test]
fn expired_preparation_is_redone() {
    let mut status = bound(1, None);
    status.preparation = Some(Preparation {
        preparation_id: "p1".into(),
        preparation_expires_at: Time(now().checked_sub(jiff_secs(1)).unwrap()),
    });
    let ws = workspace(Some(plan(1)), Some(status));
    let mut case = Case::new(&ws);
    let mut edge_objects = prepared(1);
    edge_objects.role = None;
    case.edge_objects = Some(edge_objects);
    let decision = case.decide();
    assert_eq!(
        steps(&decision),
        [
            "write-status",
            "delete-service-account",
            "delete-role-binding",
            "delete-values-secret"
        ]
    );
    assert!(events(&decision).contains(&"PreparationExpired"));
    let status = last_status(&decision);
    let preparation = status.preparation.unwrap();
    assert_ne!(preparation.preparation_id, "p1");
    assert!(preparation.preparation_expires_at.0 > now());
    assert_eq!(decision.next, Next::Continue);
}
