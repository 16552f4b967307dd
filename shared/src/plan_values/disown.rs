//! Values a create finds stored with a lost Workspace's owner reference (ADR 41).
//!
//! A hub restored from a backup may get the PlanValues objects back with their owner
//! references, which name the UIDs of Workspaces that no longer exist. The garbage
//! collector deletes an object all of whose owners are gone, so it would delete values a
//! restored Workspace's new plan refers to, before the installer takes them into the new
//! Workspace's ownership: the attempt would then be rejected for missing values. When a
//! create seals values that are stored already, the webhook therefore removes owner
//! references to any Workspace but a live one of that name (whose create is about to fail
//! with AlreadyExists, and whose values stay as they are).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::json;

/// The patch that drops the owner references of the stored object with `object_uid`,
/// unless it has none or one of them is `live_workspace_uid` (the UID of the Workspace of
/// that name that exists now, if any). The patch tests the object's UID and its owner
/// references as read, so it changes nothing that changed meanwhile.
pub fn disown_lost_owners(
    object_uid: &str,
    owners: &[OwnerReference],
    live_workspace_uid: Option<&str>,
) -> Option<json_patch::Patch> {
    if owners.is_empty()
        || owners
            .iter()
            .any(|o| Some(o.uid.as_str()) == live_workspace_uid)
    {
        return None;
    }
    serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/uid", "value": object_uid},
        {"op": "test", "path": "/metadata/ownerReferences", "value": owners},
        {"op": "remove", "path": "/metadata/ownerReferences"},
    ]))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "providers.platform.dev/v1alpha1".into(),
            kind: "Workspace".into(),
            name: "demo".into(),
            uid: uid.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_lost_workspaces_reference_is_dropped() {
        let patch = disown_lost_owners("values-uid", &[owner("lost")], None).unwrap();
        let patch = serde_json::to_value(&patch).unwrap();
        assert_eq!(
            patch[0],
            json!({"op": "test", "path": "/metadata/uid", "value": "values-uid"})
        );
        assert_eq!(patch[1]["op"], "test");
        assert_eq!(patch[1]["value"][0]["uid"], "lost");
        assert_eq!(
            patch[2],
            json!({"op": "remove", "path": "/metadata/ownerReferences"})
        );
        assert_eq!(patch.as_array().map(Vec::len), Some(3));
        // Another lost reference beside it, with a live Workspace of another UID: dropped too.
        assert!(disown_lost_owners("v", &[owner("lost"), owner("older")], Some("live")).is_some());
    }

    #[test]
    fn values_without_owners_or_of_a_live_workspace_stay_as_they_are() {
        assert_eq!(disown_lost_owners("v", &[], None), None);
        assert_eq!(
            disown_lost_owners("v", &[owner("live")], Some("live")),
            None
        );
        assert_eq!(
            disown_lost_owners("v", &[owner("lost"), owner("live")], Some("live")),
            None
        );
    }
}
