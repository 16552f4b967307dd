//! The one-pass decoding accepts and refuses what `#[serde(flatten)]` did, and decodes to
//! the same plan.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::{Plan, Seal, SealedPlan};

/// The derived decoding this module replaces.
#[derive(Deserialize, Debug, PartialEq)]
struct Flattened {
    #[serde(flatten)]
    plan: Plan,
    seal: Seal,
}

fn sealed() -> Value {
    serde_json::to_value(SealedPlan {
        plan: crate::testing::plan(),
        seal: Seal {
            key_id: "k1".into(),
            algorithm: "Ed25519".into(),
            signature: "c2ln".into(),
        },
    })
    .unwrap()
}

/// Decodes `json` both ways: the same plan, or an error both ways.
fn both(json: &str) -> Result<SealedPlan, String> {
    let one_pass = serde_json::from_str::<SealedPlan>(json);
    let flattened = serde_json::from_str::<Flattened>(json);
    match (one_pass, flattened) {
        (Ok(one_pass), Ok(flattened)) => {
            assert_eq!(one_pass.plan, flattened.plan, "{json}");
            assert_eq!(one_pass.seal, flattened.seal, "{json}");
            Ok(one_pass)
        }
        (Err(one_pass), Err(_)) => Err(one_pass.to_string()),
        (one_pass, flattened) => panic!("{json}: {one_pass:?} against {flattened:?}"),
    }
}

#[test]
fn a_sealed_plan_decodes_to_what_was_encoded() {
    let value = sealed();
    let decoded = both(&value.to_string()).unwrap();
    assert_eq!(serde_json::to_value(&decoded).unwrap(), value);
}

#[test]
fn the_seal_may_come_anywhere_among_the_keys() {
    let value = sealed();
    let seal = value["seal"].clone();
    let mut rest = value.as_object().unwrap().clone();
    rest.remove("seal");
    let rest = Value::Object(rest).to_string();
    let inner = &rest[1..rest.len() - 1];
    let first = format!(r#"{{"seal":{seal},{inner}}}"#);
    let (head, tail) = inner.split_at(inner.find(r#","attemptID""#).unwrap());
    let middle = format!(r#"{{{head},"seal":{seal}{tail}}}"#);
    let escaped = format!(r#"{{"se\u0061l":{seal},{inner}}}"#);
    for json in [first, middle, escaped] {
        assert_eq!(both(&json).unwrap().seal.key_id, "k1");
    }
}

#[test]
fn what_flatten_refused_is_refused() {
    let mut no_seal = sealed();
    no_seal.as_object_mut().unwrap().remove("seal");
    let mut bad_seal = sealed();
    bad_seal["seal"] = json!("k1");
    let mut bad_field = sealed();
    bad_field["attempt"] = json!("one");
    let mut no_attempt = sealed();
    no_attempt.as_object_mut().unwrap().remove("attempt");
    for value in [
        no_seal,
        bad_seal,
        bad_field,
        no_attempt,
        json!([1]),
        json!(null),
    ] {
        both(&value.to_string()).unwrap_err();
    }
    let twice = sealed().to_string().replacen(
        '{',
        r#"{"seal":{"keyID":"x","algorithm":"Ed25519","signature":"x"},"#,
        1,
    );
    assert!(serde_json::from_str::<SealedPlan>(&twice).is_err());
    assert!(serde_json::from_str::<Flattened>(&twice).is_err());
}

#[test]
fn unknown_keys_are_ignored_as_before() {
    let mut value = sealed();
    value["later"] = json!({"added": [1, 2]});
    both(&value.to_string()).unwrap();
}

#[test]
fn a_sealed_plan_inside_a_workspace_decodes() {
    let mut workspace = serde_json::to_value(crate::testing::workspace(
        "w",
        crate::testing::workspace_spec(),
    ))
    .unwrap();
    workspace["spec"]["plan"] = sealed();
    let decoded: crate::api::Workspace = serde_json::from_value(workspace).unwrap();
    assert_eq!(decoded.spec.plan.unwrap().seal.key_id, "k1");
}
