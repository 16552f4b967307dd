//! Rule `release_objects_are_compared_by_contents`, case by case.

use std::sync::Arc;

use super::*;
use crate::installer::{
    ObjectSeen, ReleaseObjects,
    drift::contents::{ContentFindings, ContentSeen, Difference, FOUND_BY_CONTENTS},
    release_objects::{ObjectTrace, ReleaseObject},
};

fn object(kind: &str, name: &str) -> ReleaseObject {
    ReleaseObject {
        api_version: "v1".into(),
        kind: kind.into(),
        namespace: "hello".into(),
        name: name.into(),
    }
}

/// A content check's finding: `fields` edited by someone other than helm.
fn edited(fields: &[&str]) -> ContentSeen {
    ContentSeen::Differs(
        fields
            .iter()
            .map(|field| Difference {
                field: (*field).to_owned(),
                live_digest: Some(format!("digest of {field}")),
                helm_only: false,
            })
            .collect(),
    )
}

/// What the metadata shows: both objects present, no edit by anyone but helm.
fn unedited() -> ObjectSeen {
    ObjectSeen::Present(ObjectTrace {
        uid: "u".into(),
        ..Default::default()
    })
}

fn check_contents(
    ws: &Workspace,
    found: Option<Vec<(ReleaseObject, ContentSeen)>>,
) -> (WorkspaceStatus, Vec<&'static str>) {
    check_contents_after(ws, found, true)
}

/// [`check_contents`], the check being the first after the attempt or not.
fn check_contents_after(
    ws: &Workspace,
    found: Option<Vec<(ReleaseObject, ContentSeen)>>,
    after_attempt: bool,
) -> (WorkspaceStatus, Vec<&'static str>) {
    let mut case = Case::new(ws);
    case.edge_objects = Some(EdgeObjects {
        release: Some(revision(1, "r1", "deployed")),
        objects: Some(ReleaseObjects {
            record_uid: "r1".into(),
            objects: vec![
                (object("ConfigMap", "hello-greeting"), unedited()),
                (object("Secret", "hello-key"), unedited()),
            ],
        }),
        contents: found.map(|objects| {
            Arc::new(ContentFindings {
                record_uid: "r1".into(),
                checked_at: now(),
                after_attempt,
                rewritten_record: None,
                objects,
            })
        }),
        ..EdgeObjects::default()
    });
    let decision = case.decide();
    let status = if decision.actions.iter().any(|a| a.name() == "write-status") {
        last_status(&decision)
    } else {
        ws.status.clone().unwrap()
    };
    (status, events(&decision))
}

/// The decision on `ws`, installed at revision 1 (record `r1`) with its ConfigMap
/// unedited as its metadata shows, and `findings` the newest content check.
fn decide_with(ws: &Workspace, findings: ContentFindings) -> crate::installer::Decision {
    let mut case = Case::new(ws);
    case.edge_objects = Some(EdgeObjects {
        release: Some(revision(1, "r1", "deployed")),
        objects: Some(ReleaseObjects {
            record_uid: "r1".into(),
            objects: vec![(object("ConfigMap", "hello-greeting"), unedited())],
        }),
        contents: Some(Arc::new(findings)),
        ..EdgeObjects::default()
    });
    case.decide()
}

#[test]
fn contents_unlike_the_manifest_are_drift_though_no_manager_says_so() {
    let ws = installed(left(1, "r1"));
    let (status, events) = check_contents(
        &ws,
        Some(vec![
            (object("ConfigMap", "hello-greeting"), ContentSeen::Same),
            (object("Secret", "hello-key"), edited(&["data.key"])),
        ]),
    );
    let drift = status.drift.clone().expect("drift");
    assert_eq!(drift.reason, reason::OBJECT_CHANGED);
    assert_eq!(drift.objects.len(), 1);
    let found = &drift.objects[0];
    assert_eq!(
        (found.name.as_str(), found.fields.as_slice()),
        ("hello-key", ["data.key".to_owned()].as_slice())
    );
    assert_eq!(found.found_by.as_deref(), Some(FOUND_BY_CONTENTS));
    assert_eq!(found.manager, None);
    assert!(
        drift.message.contains(
            "Secret hello/hello-key holds other contents than the release's manifest (data.key)"
        ),
        "{}",
        drift.message
    );
    assert_eq!(events, ["ReleaseDrifted"]);
    assert_eq!(condition(&status, DRIFTED).0, "True");
}

#[test]
fn a_drift_found_by_contents_stands_until_a_check_says_otherwise() {
    let ws = installed(left(1, "r1"));
    let changed = vec![(
        object("ConfigMap", "hello-greeting"),
        edited(&["data.greeting"]),
    )];
    let (status, _) = check_contents(&ws, Some(changed));
    let mut drifted = ws.clone();
    drifted.status = Some(status.clone());
    // A pass without a check of its own (after a restart): the recorded drift stands.
    let (kept, events) = check_contents(&drifted, None);
    assert_eq!(kept.drift, status.drift);
    assert!(events.is_empty());
    // The next check finds it as the chart has it again: in sync.
    let (checked, _) = check_contents(
        &drifted,
        Some(vec![(
            object("ConfigMap", "hello-greeting"),
            ContentSeen::Same,
        )]),
    );
    assert!(checked.drift.is_none());
    assert_eq!(condition(&checked, DRIFTED).0, "False");
}

#[test]
fn fields_anyone_may_write_and_unread_objects_are_not_drift_by_contents() {
    let mut ws = installed(left(1, "r1"));
    ws.spec.plan.as_mut().unwrap().plan.drift = Some(crate::api::DriftPolicy {
        ignore_fields: vec![crate::api::IgnoredFields {
            kind: "ConfigMap".into(),
            paths: vec!["data.greeting".into()],
        }],
        ..Default::default()
    });
    let (status, _) = check_contents(
        &ws,
        Some(vec![
            (
                object("ConfigMap", "hello-greeting"),
                edited(&["data.greeting"]),
            ),
            (
                object("Secret", "hello-key"),
                ContentSeen::Unread("its kind is not readable".into()),
            ),
        ]),
    );
    assert!(status.drift.is_none());
    // A missing object is drift, found by contents too.
    let (status, _) = check_contents(
        &ws,
        Some(vec![(object("Secret", "hello-key"), ContentSeen::Missing)]),
    );
    let drift = status.drift.expect("drift");
    assert_eq!(drift.reason, reason::OBJECT_DELETED);
}

#[test]
fn a_check_of_another_revision_is_not_judged() {
    let ws = installed(left(1, "r1"));
    let findings = ContentFindings {
        record_uid: "r0".into(),
        checked_at: now(),
        after_attempt: true,
        rewritten_record: None,
        objects: vec![(object("ConfigMap", "hello-greeting"), ContentSeen::Missing)],
    };
    assert!(events(&decide_with(&ws, findings)).is_empty());
}

#[test]
fn an_edit_made_while_the_attempt_ran_is_drift_on_the_pass_that_records_the_release() {
    // The attempt's revision is not recorded yet: the pass records it and judges its
    // objects, of which the check right after the attempt found one edited.
    let ws = installed(None);
    let (status, events) = check_contents(
        &ws,
        Some(vec![(
            object("ConfigMap", "hello-greeting"),
            edited(&["data.greeting"]),
        )]),
    );
    let release = status.release.expect("the release is recorded");
    assert_eq!(release.record_uid, "r1");
    // The edit is someone else's: nothing of it is helm's own reading, nothing kept.
    assert_eq!(release.content_baseline, None);
    assert_eq!(status.drift.expect("drift").reason, reason::OBJECT_CHANGED);
    assert_eq!(events, ["ReleaseDrifted"]);
}

#[test]
fn what_helm_itself_stored_otherwise_is_the_baseline_and_a_change_of_it_is_drift() {
    let stored_by_helm = |digest: &str| {
        ContentSeen::Differs(vec![Difference {
            field: "data.greeting".into(),
            live_digest: Some(digest.into()),
            helm_only: true,
        }])
    };
    let ws = installed(None);
    let (status, events) = check_contents(
        &ws,
        Some(vec![(
            object("ConfigMap", "hello-greeting"),
            stored_by_helm("helm's"),
        )]),
    );
    assert!(status.drift.is_none(), "{:?}", status.drift);
    assert!(events.is_empty());
    let baseline = status.release.as_ref().unwrap().content_baseline.clone();
    assert_eq!(
        baseline,
        Some(vec![crate::api::ContentBaseline {
            object: "ConfigMap hello/hello-greeting".into(),
            field: "data.greeting".into(),
            digest: Some("helm's".into()),
        }])
    );
    let mut recorded = ws.clone();
    recorded.status = Some(status);
    // Later checks: the same value is not drift; another value is, even written as helm.
    let (same, _) = check_contents(
        &recorded,
        Some(vec![(
            object("ConfigMap", "hello-greeting"),
            stored_by_helm("helm's"),
        )]),
    );
    assert!(same.drift.is_none());
    let (other, _) = check_contents(
        &recorded,
        Some(vec![(
            object("ConfigMap", "hello-greeting"),
            stored_by_helm("another"),
        )]),
    );
    assert_eq!(
        other.drift.expect("drift").objects[0].fields,
        ["data.greeting"]
    );
    // The baseline is taken once: a later check does not take another.
    assert_eq!(other.release.unwrap().content_baseline, baseline);

    // Only the first check after the attempt takes one: what a later check finds helm
    // alone wrote (a writer that writes as helm, or rewrote the managed fields) is drift.
    let (later, _) = check_contents_after(
        &installed(None),
        Some(vec![(
            object("ConfigMap", "hello-greeting"),
            stored_by_helm("helm's"),
        )]),
        false,
    );
    assert_eq!(later.release.unwrap().content_baseline, None);
    assert_eq!(
        later.drift.expect("drift").objects[0].fields,
        ["data.greeting"]
    );
}

#[test]
fn the_workspace_is_looked_at_again_when_its_next_content_check_is_due() {
    let ws = installed(left(1, "r1"));
    let next = |interval: u64, checked_ago: i64| {
        let mut case = Case::new(&ws);
        case.settings.content_check_interval_seconds = interval;
        case.edge_objects = Some(EdgeObjects {
            release: Some(revision(1, "r1", "deployed")),
            contents: Some(Arc::new(ContentFindings {
                record_uid: "r1".into(),
                checked_at: now() - k8s_openapi::jiff::SignedDuration::from_secs(checked_ago),
                after_attempt: false,
                rewritten_record: None,
                objects: Vec::new(),
            })),
            ..EdgeObjects::default()
        });
        case.decide().next
    };
    // Sooner than the drift interval (300 s, spread by a tenth) when the check is due first.
    assert_eq!(next(60, 20), Next::After(40));
    assert_eq!(next(60, 600), Next::After(1));
    assert!(matches!(next(1800, 0), Next::After(s) if (300..=331).contains(&s)));
    assert!(matches!(next(0, 0), Next::After(s) if (300..=331).contains(&s)));
}

#[test]
fn a_release_record_rewritten_since_it_was_first_read_is_drift() {
    let ws = installed(left(1, "r1"));
    let findings = ContentFindings {
        record_uid: "r1".into(),
        checked_at: now(),
        after_attempt: false,
        rewritten_record: Some("sh.helm.release.v1.hello.v1".into()),
        objects: Vec::new(),
    };
    let decision = decide_with(&ws, findings);
    let drift = last_status(&decision).drift.expect("drift");
    let record = &drift.objects[0];
    assert_eq!(
        (
            record.kind.as_str(),
            record.name.as_str(),
            record.fields.as_slice()
        ),
        (
            "Secret",
            "sh.helm.release.v1.hello.v1",
            ["data.release".to_owned()].as_slice()
        )
    );
    assert_eq!(record.found_by.as_deref(), Some(FOUND_BY_CONTENTS));
}
