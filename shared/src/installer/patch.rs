//! Guarded JSON patches. Each starts with `test` operations on what the decision was
//! taken from (the object's UID, its ownership label, the finalizer's position), so the
//! API server applies it only to that very object in that very state.

use json_patch::{
    AddOperation, Patch, PatchOperation, RemoveOperation, ReplaceOperation, TestOperation,
    jsonptr::PointerBuf,
};
use serde_json::{Value, json};

use crate::api::WorkspaceStatus;

use super::{names, observation::ObjectState};

fn pointer<'t>(tokens: impl IntoIterator<Item = &'t str>) -> PointerBuf {
    PointerBuf::from_tokens(tokens)
}

fn test(tokens: &[&str], value: Value) -> PatchOperation {
    PatchOperation::Test(TestOperation {
        path: pointer(tokens.iter().copied()),
        value,
    })
}

fn test_uid(uid: &str) -> PatchOperation {
    test(&["metadata", "uid"], json!(uid))
}

/// Writes the whole status of the Workspace with `uid`.
pub fn write_status(uid: &str, status: &WorkspaceStatus) -> Result<Patch, serde_json::Error> {
    Ok(Patch(vec![
        test_uid(uid),
        PatchOperation::Add(AddOperation {
            path: pointer(["status"]),
            value: serde_json::to_value(status)?,
        }),
    ]))
}

/// Raises spec.retry by one and sets the automatic repair annotation on `live` (the
/// Workspace as read just now), guarded by its UID and resourceVersion: `None` when it no
/// longer holds the installed attempt `request` was decided for at the same spec.retry, or
/// holds no drift.
pub fn request_repair(
    live: &crate::api::Workspace,
    request: &super::action::RepairRequest,
) -> Option<Patch> {
    let meta = &live.metadata;
    let sealed = live.spec.plan.as_ref()?;
    let drifted = live.status.as_ref().is_some_and(|s| s.drift.is_some());
    let retry = live.spec.retry.unwrap_or(0);
    if sealed.plan.attempt_id != request.attempt_id || retry != request.retry || !drifted {
        return None;
    }
    let attempt = json!(request.attempt.to_string());
    let annotation = match &meta.annotations {
        Some(_) => AddOperation {
            path: pointer([
                "metadata",
                "annotations",
                names::ANNOTATION_AUTOMATIC_REPAIR,
            ]),
            value: attempt,
        },
        None => AddOperation {
            path: pointer(["metadata", "annotations"]),
            value: json!({ names::ANNOTATION_AUTOMATIC_REPAIR: attempt }),
        },
    };
    Some(Patch(vec![
        test_uid(meta.uid.as_deref().unwrap_or_default()),
        test(
            &["metadata", "resourceVersion"],
            json!(meta.resource_version.as_deref().unwrap_or_default()),
        ),
        PatchOperation::Add(AddOperation {
            path: pointer(["spec", "retry"]),
            value: json!(retry + 1),
        }),
        PatchOperation::Add(annotation),
    ]))
}

/// Adds the installer's finalizer to the object observed as `object`.
pub fn add_finalizer(object: &ObjectState) -> Patch {
    let mut finalizers = object.finalizers.clone();
    finalizers.push(names::FINALIZER.to_owned());
    Patch(vec![
        test_uid(&object.uid),
        test(
            &["metadata", "resourceVersion"],
            json!(object.resource_version),
        ),
        PatchOperation::Add(AddOperation {
            path: pointer(["metadata", "finalizers"]),
            value: json!(finalizers),
        }),
    ])
}

/// Removes the installer's finalizer from the object observed as `object`, every copy of
/// it (a tenant may list it twice; one left behind would hold the object until a resync);
/// `None` when it does not carry it. From the last position down, so each index still
/// names what its `test` saw.
pub fn remove_finalizer(object: &ObjectState) -> Option<Patch> {
    let positions: Vec<String> = object
        .finalizers
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, finalizer)| *finalizer == names::FINALIZER)
        .map(|(index, _)| index.to_string())
        .collect();
    if positions.is_empty() {
        return None;
    }
    let mut operations = vec![test_uid(&object.uid)];
    for at in &positions {
        operations.push(test(
            &["metadata", "finalizers", at],
            json!(names::FINALIZER),
        ));
        operations.push(PatchOperation::Remove(RemoveOperation {
            path: pointer(["metadata", "finalizers", at.as_str()]),
        }));
    }
    Some(Patch(operations))
}

/// Hands a released namespace to the Workspace with `uid`.
pub fn adopt_namespace(namespace: &ObjectState, uid: &str) -> Patch {
    Patch(
        vec![
            test_uid(&namespace.uid),
            test(
                &["metadata", "labels", names::LABEL_WORKSPACE_UID],
                json!(namespace.label(names::LABEL_WORKSPACE_UID)),
            ),
            test(
                &["metadata", "labels", names::LABEL_RELEASED],
                json!("true"),
            ),
            PatchOperation::Replace(ReplaceOperation {
                path: pointer(["metadata", "labels", names::LABEL_WORKSPACE_UID]),
                value: json!(uid),
            }),
            PatchOperation::Remove(RemoveOperation {
                path: pointer(["metadata", "labels", names::LABEL_RELEASED]),
            }),
        ]
        .into_iter()
        .chain(pod_security(namespace))
        .collect(),
    )
}

/// Sets the namespace's Pod Security Standard to the installer's level when it enforces
/// none or a looser one (a namespace from an earlier version): the edge's confinement
/// policy admits no change from the installer to a namespace without it.
fn pod_security(namespace: &ObjectState) -> Option<PatchOperation> {
    let level = namespace.label(names::LABEL_POD_SECURITY_ENFORCE);
    (level != names::POD_SECURITY_LEVEL && level != "restricted").then(|| {
        PatchOperation::Add(AddOperation {
            path: pointer(["metadata", "labels", names::LABEL_POD_SECURITY_ENFORCE]),
            value: json!(names::POD_SECURITY_LEVEL),
        })
    })
}

/// Marks the namespace of the Workspace with `uid` as released, for a later Workspace of
/// the same organization and name.
pub fn release_namespace(namespace: &ObjectState, uid: &str) -> Patch {
    Patch(
        vec![
            test_uid(&namespace.uid),
            test(
                &["metadata", "labels", names::LABEL_WORKSPACE_UID],
                json!(uid),
            ),
            PatchOperation::Add(AddOperation {
                path: pointer(["metadata", "labels", names::LABEL_RELEASED]),
                value: json!("true"),
            }),
        ]
        .into_iter()
        .chain(pod_security(namespace))
        .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repair_request_raises_retry_on_the_very_workspace_it_was_decided_for() {
        use crate::installer::RepairRequest;
        use crate::installer::tests::{plan, workspace};
        let mut ws = workspace(Some(plan(1)), None);
        ws.metadata.resource_version = Some("42".into());
        ws.status = Some(WorkspaceStatus {
            drift: Some(crate::testing::drift("ObjectChanged", "")),
            ..Default::default()
        });
        let request = RepairRequest {
            attempt: 1,
            attempt_id: ws.spec.plan.as_ref().unwrap().plan.attempt_id.clone(),
            retry: 0,
        };
        for annotations in [None, Some([("a".to_owned(), "b".to_owned())].into())] {
            ws.metadata.annotations = annotations;
            let patch = request_repair(&ws, &request).expect("a request");
            let mut json = serde_json::to_value(&ws).unwrap();
            json_patch::patch(&mut json, &patch).expect("applies to the Workspace read");
            assert_eq!(json["spec"]["retry"], json!(1));
            assert_eq!(
                json["metadata"]["annotations"][names::ANNOTATION_AUTOMATIC_REPAIR],
                json!("1")
            );
            // Any other write in between fails the test of the resourceVersion.
            json["metadata"]["resourceVersion"] = json!("43");
            json["spec"]["retry"] = json!(0);
            assert!(json_patch::patch(&mut json, &patch).is_err());
        }
        // Repaired, raised or drift gone meanwhile: nothing is asked.
        let mut other = ws.clone();
        other.spec.retry = Some(1);
        assert!(request_repair(&other, &request).is_none());
        let mut in_sync = ws.clone();
        in_sync.status.as_mut().unwrap().drift = None;
        assert!(request_repair(&in_sync, &request).is_none());
        let stale = RepairRequest {
            attempt_id: "other".into(),
            ..request
        };
        assert!(request_repair(&ws, &stale).is_none());
    }

    #[test]
    fn a_namespace_without_the_pod_security_standard_gets_it_when_touched() {
        let mut ns = ObjectState {
            uid: "n1".into(),
            ..Default::default()
        };
        let text = serde_json::to_string(&release_namespace(&ns, "w1")).unwrap();
        assert!(
            text.contains("pod-security.kubernetes.io~1enforce") && text.contains("baseline"),
            "{text}"
        );
        ns.labels.insert(
            names::LABEL_POD_SECURITY_ENFORCE.into(),
            "restricted".into(),
        );
        let text = serde_json::to_string(&adopt_namespace(&ns, "w1")).unwrap();
        assert!(
            !text.contains("pod-security"),
            "a stricter level stays: {text}"
        );
    }

    #[test]
    fn label_keys_are_escaped_in_pointers() {
        let ns = ObjectState {
            uid: "n1".into(),
            ..Default::default()
        };
        let text = serde_json::to_string(&release_namespace(&ns, "w1")).unwrap();
        assert!(
            text.contains("/metadata/labels/providers.platform.dev~1workspace-uid"),
            "{text}"
        );
    }

    #[test]
    fn finalizer_removal_tests_its_position() {
        let job = ObjectState {
            uid: "j1".into(),
            finalizers: vec!["other".into(), names::FINALIZER.into()],
            ..Default::default()
        };
        let patch = remove_finalizer(&job).unwrap();
        let text = serde_json::to_string(&patch).unwrap();
        assert!(
            text.contains(r#""op":"test","path":"/metadata/finalizers/1""#),
            "{text}"
        );
        assert!(remove_finalizer(&ObjectState::default()).is_none());
    }

    #[test]
    fn finalizer_removal_takes_every_copy_and_keeps_the_others() {
        let object = ObjectState {
            uid: "u1".into(),
            finalizers: vec![
                names::FINALIZER.into(),
                "other".into(),
                names::FINALIZER.into(),
            ],
            ..Default::default()
        };
        let patch = remove_finalizer(&object).unwrap();
        let mut value = json!({
            "metadata": {"uid": "u1", "finalizers": [names::FINALIZER, "other", names::FINALIZER]}
        });
        json_patch::patch(&mut value, &patch).unwrap();
        assert_eq!(value["metadata"]["finalizers"], json!(["other"]));
    }
}
