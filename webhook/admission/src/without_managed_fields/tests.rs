//! The managed fields are skipped, and everything else decodes as before.

use super::*;
use providers_shared::api::Workspace;
use serde_json::{Value, json};

fn managed_fields() -> Value {
    json!([
        {
            "manager": "kubectl-client-side-apply", "operation": "Update",
            "apiVersion": "providers.platform.dev/v1alpha1", "time": "2026-12-01T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {".": {}, "f:edge": {}, "f:recipe": {}, "f:values": {".": {}, "f:replicas": {}}}}
        },
        {
            "manager": "providers-installer", "operation": "Update", "subresource": "status",
            "apiVersion": "providers.platform.dev/v1alpha1", "time": "2026-12-01T10:00:01Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {".": {}, "f:conditions": {".": {}, "k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}}}}
        }
    ])
}

fn workspace() -> Value {
    json!({
        "apiVersion": "providers.platform.dev/v1alpha1", "kind": "Workspace",
        "metadata": {
            "name": "w", "namespace": "org-a", "uid": "u-1", "generation": 3,
            "resourceVersion": "42", "finalizers": ["providers.platform.dev/installer"],
            "annotations": {"a": "b"}, "labels": {"l": "v"},
            "creationTimestamp": "2026-12-01T10:00:00Z",
            "managedFields": managed_fields()
        },
        "spec": {"recipe": "r", "edge": "e", "retry": 2, "values": {"replicas": 3}},
        "status": {"attempt": 1, "cleanedUp": true}
    })
}

/// What the plain decoding gives, with the managed fields taken out afterwards.
fn decoded_in_full(json: &str) -> Workspace {
    let mut workspace: Workspace = serde_json::from_str(json).unwrap();
    workspace.metadata.managed_fields = None;
    workspace
}

#[test]
fn everything_but_the_managed_fields_decodes_as_before() {
    let json = workspace().to_string();
    let decoded: Workspace = from_str(&json).unwrap();
    assert_eq!(decoded.metadata.managed_fields, None);
    assert_eq!(decoded, decoded_in_full(&json));
    assert_eq!(decoded.metadata.finalizers.as_ref().unwrap().len(), 1);
    assert_eq!(decoded.spec.retry, Some(2));
}

#[test]
fn keys_in_any_order_and_escaped_keys_decode_as_before() {
    let json = r#"{"spec":{"recipe":"r","edge":"e"},"met\u0061data":{"managedFields":[{"fieldsV1":{"f:x":{}}}],"n\u0061me":"w"},"kind":"Workspace","apiVersion":"providers.platform.dev/v1alpha1"}"#;
    let decoded: Workspace = from_str(json).unwrap();
    assert_eq!(decoded.metadata.name.as_deref(), Some("w"));
    assert_eq!(decoded, decoded_in_full(json));
}

#[test]
fn managed_fields_of_any_shape_are_skipped() {
    let mut object = workspace();
    object["metadata"]["managedFields"] = json!("not a list");
    let decoded: Workspace = from_str(&object.to_string()).unwrap();
    assert_eq!(decoded.metadata.name.as_deref(), Some("w"));
    // The same key elsewhere is not metadata's: it is decoded (or ignored) as before.
    let mut object = workspace();
    object["spec"]["values"]["managedFields"] = json!(1);
    let json = object.to_string();
    let decoded: Workspace = from_str(&json).unwrap();
    assert_eq!(
        decoded.spec.values.as_ref().unwrap()["managedFields"],
        json!(1)
    );
}

#[test]
fn what_the_plain_decoding_refuses_is_still_refused() {
    let mut wrong_type = workspace();
    wrong_type["spec"]["retry"] = json!("two");
    let mut metadata_not_an_object = workspace();
    metadata_not_an_object["metadata"] = json!(["w"]);
    let mut bad_metadata_field = workspace();
    bad_metadata_field["metadata"]["generation"] = json!("3");
    for object in [
        wrong_type,
        metadata_not_an_object,
        bad_metadata_field,
        json!(7),
    ] {
        let json = object.to_string();
        assert!(serde_json::from_str::<Workspace>(&json).is_err(), "{json}");
        assert!(from_str::<Workspace>(&json).is_err(), "{json}");
    }
    let mut duplicate = workspace().to_string();
    duplicate.insert_str(1, r#""metadata":{"name":"x"},"#);
    assert!(from_str::<Workspace>(&duplicate).is_err());
}

#[test]
fn bad_json_inside_the_managed_fields_or_after_the_object_is_refused() {
    let json = workspace().to_string();
    let broken = json.replacen(r#""fieldsType""#, r#""fieldsType"#, 1);
    assert!(from_str::<Workspace>(&broken).is_err());
    assert!(from_str::<Workspace>(&format!("{json} {{}}")).is_err());
    assert!(from_str::<Workspace>(&format!("{json} ")).is_ok());
}

#[test]
fn an_error_names_the_path_of_the_field_at_fault() {
    let mut wrong_type = workspace();
    wrong_type["spec"]["retry"] = json!("two");
    let mut incomplete_plan = workspace();
    incomplete_plan["spec"]["plan"] = json!({"attempt": 1});
    let mut bad_metadata = workspace();
    bad_metadata["metadata"]["generation"] = json!("3");
    for (object, path) in [
        (wrong_type, "spec.retry: invalid type"),
        (incomplete_plan, "spec.plan: missing field"),
        (bad_metadata, "metadata.generation: invalid type"),
    ] {
        let json = object.to_string();
        assert!(from_str::<Workspace>(&json).is_err());
        let message = error_at_path::<Workspace>(&json).unwrap();
        assert!(message.starts_with(path), "{message}");
    }
    let trailing = format!("{} x", workspace());
    assert!(
        error_at_path::<Workspace>(&trailing)
            .unwrap()
            .contains("trailing characters")
    );
    assert_eq!(error_at_path::<Workspace>(&workspace().to_string()), None);
}
