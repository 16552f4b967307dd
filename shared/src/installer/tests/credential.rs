//! The runtime credential is minted once, and only objects owned by the Workspace's UID
//! count as its own.

use super::*;

#[test]
fn runtime_credential_is_minted_once() {
    let mut with_credential = plan(1);
    with_credential.runtime_credential = Some(RuntimeCredential {
        role: "provider-runtime".into(),
        value_path: "hub.secret".into(),
    });
    let ws = workspace(Some(with_credential), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(prepared(1));
    case.hub = Some(HubObjects::default());
    let decision = case.decide();
    assert_eq!(
        steps(&decision),
        [
            "create-hub-service-account",
            "create-hub-role-binding",
            "write-status",
            "mint-runtime-credential",
            "create-job"
        ]
    );
    assert_eq!(
        last_status(&decision).runtime_credential_secret.as_deref(),
        Some("demo-hub-credential")
    );
    let mut mine = object("x", UID, "", "");
    mine.owner_uids = vec![UID.into()];
    case.hub = Some(HubObjects {
        service_account: Some(mine.clone()),
        role_binding: Some(mine.clone()),
        role_binding_role: Some("provider-runtime".into()),
    });
    let mut edge_objects = prepared(1);
    edge_objects.runtime_credential = Some(mine);
    case.edge_objects = Some(edge_objects.clone());
    assert_eq!(
        edge_steps(&case.decide()),
        ["create-job"],
        "present: not minted again"
    );
}

#[test]
fn runtime_credential_is_owned_by_uid() {
    let mut with_credential = plan(1);
    with_credential.runtime_credential = Some(RuntimeCredential {
        role: "provider-runtime".into(),
        value_path: "hub.secret".into(),
    });
    let ws = workspace(Some(with_credential), Some(bound(1, None)));
    let mut mine = object("x", UID, "", "");
    mine.owner_uids = vec![UID.into()];
    // The annotation alone, which anyone in the namespace can write, is not ownership.
    let mut annotated = object("forged", OTHER_UID, "", "");
    annotated.owner_uids = vec![OTHER_UID.into()];
    // Our label without our owner reference is not ours either.
    let labelled_only = object("labelled", UID, "", "");
    let cases: [(&str, HubObjects, Option<ObjectState>, &[&str]); 4] = [
        (
            "a ServiceAccount of someone else",
            HubObjects {
                service_account: Some(annotated.clone()),
                role_binding: Some(mine.clone()),
                role_binding_role: Some("provider-runtime".into()),
            },
            Some(mine.clone()),
            &["delete-hub-service-account"],
        ),
        (
            "a RoleBinding labelled but not owned",
            HubObjects {
                service_account: Some(mine.clone()),
                role_binding: Some(labelled_only.clone()),
                role_binding_role: Some("provider-runtime".into()),
            },
            Some(mine.clone()),
            &["delete-hub-role-binding"],
        ),
        (
            "a RoleBinding of ours to another Role",
            HubObjects {
                service_account: Some(mine.clone()),
                role_binding: Some(mine.clone()),
                role_binding_role: Some("admin".into()),
            },
            Some(mine.clone()),
            &["delete-hub-role-binding"],
        ),
        (
            "an edge Secret of another Workspace",
            HubObjects {
                service_account: Some(mine.clone()),
                role_binding: Some(mine.clone()),
                role_binding_role: Some("provider-runtime".into()),
            },
            Some(annotated.clone()),
            &["delete-values-secret"],
        ),
    ];
    for (what, hub, secret, expected) in cases {
        let mut case = Case::new(&ws);
        let mut edge_objects = prepared(1);
        edge_objects.runtime_credential = secret;
        case.edge_objects = Some(edge_objects);
        case.hub = Some(hub);
        let decision = case.decide();
        assert_eq!(edge_steps(&decision), expected, "{what}");
        assert!(
            events(&decision).contains(&"RuntimeCredentialReplaced"),
            "{what}"
        );
        assert_eq!(decision.next, Next::Continue, "{what}");
    }
    // Once replaced, ours are created and minted.
    let mut case = Case::new(&ws);
    case.edge_objects = Some(prepared(1));
    case.hub = Some(HubObjects::default());
    let created = case.decide();
    let hub_objects: Vec<&Action> = created
        .actions
        .iter()
        .filter(|a| {
            matches!(
                a,
                Action::CreateHubServiceAccount(_) | Action::CreateHubRoleBinding(_)
            )
        })
        .collect();
    for action in hub_objects {
        let meta = match action {
            Action::CreateHubServiceAccount(sa) => &sa.metadata,
            Action::CreateHubRoleBinding(rb) => &rb.metadata,
            _ => unreachable!(),
        };
        let owner = &meta.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("Workspace", UID)
        );
        assert_eq!(
            meta.labels.as_ref().unwrap()[names::LABEL_WORKSPACE_UID],
            UID
        );
    }
}
