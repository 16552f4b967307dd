//! Decoding reviews and encoding answers.

use super::*;
use crate::answer::Answer;
use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Value, json};

fn review_json(kind: &str, operation: &str, object: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u1",
            "kind": {"group": "providers.platform.dev", "version": "v1alpha1", "kind": kind},
            "resource": {"group": "providers.platform.dev", "version": "v1alpha1", "resource": "workspaces"},
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object,
            "oldObject": null,
            "dryRun": false
        }
    }))
    .unwrap()
}

fn workspace() -> Value {
    json!({
        "apiVersion": "providers.platform.dev/v1alpha1", "kind": "Workspace",
        "metadata": {"name": "w", "namespace": "org-a"},
        "spec": {"recipe": "r", "edge": "e"}
    })
}

fn refusal_message(body: &[u8]) -> String {
    match decode(body) {
        Ok(Review::Refused { uid, message, .. }) => {
            assert_eq!(uid, "u1");
            message
        }
        Ok(Review::Workspace(_)) => panic!("decoded"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_workspace_review_decodes() {
    let Review::Workspace(review) =
        decode(&review_json("Workspace", "CREATE", workspace())).unwrap()
    else {
        panic!("refused");
    };
    assert_eq!(review.operation, Operation::Create);
    assert_eq!(review.object.spec.recipe, "r");
    assert!(review.old.is_none());
    assert_eq!(review.user.username.as_deref(), Some("alice"));
}

#[test]
fn undecodable_bodies_are_client_errors() {
    let cases: [(&[u8], &str); 6] = [
        (b"", "not a JSON AdmissionReview"),
        (
            b"{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionRev",
            "not a JSON AdmissionReview",
        ),
        (b"\xff\xfe\x00garbage", "not a JSON AdmissionReview"),
        (b"[1,2,3]", "not a JSON AdmissionReview"),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
            "has no request",
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}"#,
            "not admission.k8s.io/v1",
        ),
    ];
    for (body, text) in cases {
        let error = decode(body)
            .err()
            .unwrap_or_else(|| panic!("{body:?} decoded"));
        assert!(error.to_string().contains(text), "{error}");
    }
}

#[test]
fn reviews_this_webhook_does_not_decide_are_refused_with_a_reason() {
    assert!(refusal_message(&review_json("Pod", "CREATE", workspace())).contains("Workspace only"));
    assert!(
        refusal_message(&review_json("Workspace", "DELETE", workspace()))
            .contains("CREATE and UPDATE only")
    );
    let mut broken = workspace();
    broken["spec"] = json!({"recipe": 5});
    let message = refusal_message(&review_json("Workspace", "CREATE", broken));
    assert!(
        message.starts_with("the object is not a valid Workspace: spec.recipe: invalid type"),
        "{message}"
    );
    let mut no_spec = workspace();
    no_spec.as_object_mut().unwrap().remove("spec");
    assert!(
        refusal_message(&review_json("Workspace", "UPDATE", no_spec))
            .contains("not a valid Workspace")
    );
}

#[test]
fn an_object_beyond_the_shape_limits_is_refused_before_decoding() {
    let mut wide = workspace();
    let values: serde_json::Map<String, Value> = (0..shape::WORKSPACE.entries + 1)
        .map(|i| (format!("k{i}"), json!(0)))
        .collect();
    wide["spec"]["values"] = Value::Object(values);
    let message = refusal_message(&review_json("Workspace", "CREATE", wide));
    assert!(
        message.contains(
            "spec.values: it holds more than 20000 entries; a Workspace holds a few thousand at most"
        ),
        "{message}"
    );
    assert!(message.ends_with("send fewer"), "{message}");
}

#[test]
fn a_uid_that_is_not_made_like_a_uuid_is_refused_before_it_is_logged() {
    let mut review: Value =
        serde_json::from_slice(&review_json("Workspace", "CREATE", workspace())).unwrap();
    review["request"]["uid"] = json!("6f1c-AB12-0");
    assert!(decode(&serde_json::to_vec(&review).unwrap()).is_ok());
    for forged in [
        "u\n2026-12-04T00:00:00Z  INFO forged",
        "u\u{1b}[31m",
        "a b",
        "u/1",
        "",
    ] {
        review["request"]["uid"] = json!(forged);
        match decode(&serde_json::to_vec(&review).unwrap()) {
            Err(ReviewError::NotJson(message)) => {
                assert!(message.contains("request.uid must be letters"), "{message}")
            }
            _ => panic!("{forged:?} was accepted"),
        }
    }
}

#[test]
fn what_serde_quotes_from_the_object_is_escaped() {
    let mut forged = workspace();
    forged["status"] = json!({"phase": "X\n2026-12-04T06:50:00Z  INFO forged line\u{1b}[2J"});
    let message = refusal_message(&review_json("Workspace", "CREATE", forged));
    assert!(
        message.contains("status.phase: unknown variant"),
        "{message}"
    );
    assert!(
        !message.contains('\n') && !message.contains('\u{1b}'),
        "{message}"
    );
    assert!(message.contains("X\\n2026"), "{message}");
}

#[test]
fn values_nested_too_deep_are_refused_naming_spec_values() {
    let mut deep = workspace();
    let mut values = json!(0);
    for _ in 0..200 {
        values = json!({ "a": values });
    }
    deep["spec"]["values"] = values;
    let message = refusal_message(&review_json("Workspace", "CREATE", deep));
    assert!(
        message.contains("the object is not a valid Workspace: spec.values.a.a.a"),
        "{message}"
    );
    assert!(
        message.ends_with(
            "it nests deeper than 32 levels; a Workspace nests at most about 20 levels; this one was built by hand or by a broken tool: nest less"
        ),
        "{message}"
    );
}

#[test]
fn the_answer_is_an_admission_review() {
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "add", "path": "/spec/plan", "value": {"a": 1}}
    ]))
    .unwrap();
    let answer = Answer::patched("u1", &patch).unwrap();
    let review: Value = serde_json::from_slice(&answer.to_json()).unwrap();
    assert_eq!(review["apiVersion"], API_VERSION);
    assert_eq!(review["kind"], "AdmissionReview");
    assert_eq!(review["response"]["uid"], "u1");
    assert_eq!(review["response"]["allowed"], true);
    assert_eq!(review["response"]["patchType"], "JSONPatch");
    let decoded = STANDARD
        .decode(review["response"]["patch"].as_str().unwrap())
        .unwrap();
    let back: Value = serde_json::from_slice(&decoded).unwrap();
    assert_eq!(back[0]["path"], "/spec/plan");

    let denied = Answer::deny("u2", "no".into(), "Nope", 422);
    let review: Value = serde_json::from_slice(&denied.to_json()).unwrap();
    assert_eq!(review["response"]["allowed"], false);
    assert_eq!(review["response"]["status"]["message"], "no");
    assert_eq!(review["response"]["status"]["code"], 422);
}

mod properties {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::super::decode;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((".{0,8}", inner), 0..6).prop_map(|entries| {
                    Value::Object(entries.into_iter().collect::<Map<_, _>>())
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_bytes_decode_or_are_refused(body in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode(&body);
        }

        #[test]
        fn any_json_in_a_review_decodes_or_is_refused(
            object in json_value(),
            old in json_value(),
            request in json_value(),
        ) {
            let review = json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {
                    "uid": "u", "operation": "UPDATE",
                    "kind": {"group": "providers.platform.dev", "kind": "Workspace"},
                    "object": object, "oldObject": old,
                },
            });
            let _ = decode(&serde_json::to_vec(&review).unwrap());
            let envelope = json!({"apiVersion": "admission.k8s.io/v1", "request": request});
            let _ = decode(&serde_json::to_vec(&envelope).unwrap());
        }
    }
}

#[test]
fn a_refused_review_names_its_requester_bounded_for_the_log() {
    let mut body: Value =
        serde_json::from_slice(&review_json("ConfigMap", "CREATE", workspace())).expect("a review");
    body["request"]["userInfo"]["username"] = json!(format!("mallory\n{}", "x".repeat(10_000)));
    match decode(&serde_json::to_vec(&body).expect("json")) {
        Ok(Review::Refused { user, .. }) => {
            // The log's formatter escapes the newline; the length is bounded here.
            assert!(user.starts_with("mallory\nxxx"), "{user:?}");
            assert!(user.len() <= 256 + '…'.len_utf8(), "{} bytes", user.len());
            assert!(user.ends_with('…'));
        }
        Ok(Review::Workspace(_)) => panic!("decoded"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_requester_with_more_groups_than_any_authenticator_gives_is_refused_before_decoding() {
    let mut body: Value =
        serde_json::from_slice(&review_json("Workspace", "CREATE", workspace())).expect("a review");
    body["request"]["userInfo"]["groups"] = json!(vec!["g"; 10_001]);
    let Ok(Review::Refused { uid, message, .. }) =
        decode(&serde_json::to_vec(&body).expect("json"))
    else {
        panic!("not refused");
    };
    assert_eq!(uid, "u1");
    assert!(
        message.starts_with("request.userInfo: groups["),
        "{message}"
    );
    assert!(
        message.contains("it holds more than 10000 entries: the requester carries more groups"),
        "{message}"
    );
    body["request"]["userInfo"]["groups"] = json!(vec!["g"; 9_000]);
    let Review::Workspace(review) = decode(&serde_json::to_vec(&body).expect("json")).unwrap()
    else {
        panic!("refused");
    };
    assert_eq!(review.user.groups.map(|g| g.len()), Some(9_000));
}
