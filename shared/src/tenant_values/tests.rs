use super::*;
use crate::testing::field;
use rstest::rstest;
use serde_json::json;

fn schema() -> Vec<ValueField> {
    vec![
        ValueField {
            maximum: Some(5.0),
            minimum: Some(1.0),
            ..field("replicaCount", ValueType::Integer)
        },
        ValueField {
            pattern: Some("[a-z.]+".to_owned()),
            max_length: Some(20),
            ..field("ingress.host", ValueType::String)
        },
        ValueField {
            enum_: Some(vec!["debug".into(), "info".into()]),
            ..field("log.level", ValueType::String)
        },
        field("metrics.enabled", ValueType::Boolean),
        field("ratio", ValueType::Number),
    ]
}

#[test]
fn allowed_values_pass() {
    let values = json!({"replicaCount": 3, "ingress": {"host": "a.example"}, "log": {"level": "info"},
        "metrics": {"enabled": true}, "ratio": 0.5});
    assert_eq!(check("r", &schema(), Some(&values)), Ok(()));
    assert_eq!(check("r", &schema(), None), Ok(()));
}

#[rstest]
#[case(json!({"image": {"repository": "evil"}}), "spec.values.image", "does not let tenants set")]
#[case(json!({"replicaCount": "3"}), "spec.values.replicaCount", "must be an integer, not a string")]
#[case(json!({"replicaCount": 1.5}), "spec.values.replicaCount", "must be an integer")]
#[case(json!({"replicaCount": 9}), "spec.values.replicaCount", "above the maximum 5")]
#[case(json!({"replicaCount": 0}), "spec.values.replicaCount", "below the minimum 1")]
#[case(json!({"ingress": {"host": "UPPER"}}), "spec.values.ingress.host", "does not match the pattern")]
#[case(json!({"ingress": {"host": "a".repeat(21)}}), "spec.values.ingress.host", "at most 20")]
#[case(json!({"log": {"level": "trace"}}), "spec.values.log.level", "not one of the allowed values")]
#[case(json!({"metrics": {"enabled": "yes"}}), "spec.values.metrics.enabled", "must be a boolean")]
#[case(json!({"ratio": [1]}), "spec.values.ratio", "must be a number, not a list")]
#[case(json!({"ingress": null}), "spec.values.ingress", "does not let tenants set")]
#[case(json!([1, 2]), "spec.values", "must be an object")]
fn each_rule_names_the_path(#[case] values: Value, #[case] field: &str, #[case] text: &str) {
    let error = check("r", &schema(), Some(&values)).expect_err(&values.to_string());
    assert_eq!(error.field(), field, "{values}");
    assert!(error.to_string().contains(text), "{values}: {error}");
}

#[test]
fn an_unknown_key_stops_the_walk_and_the_message_stays_short() {
    // One long key over a couple of thousand leaves: the shape that once cost hundreds
    // of MB, when a path string was built per leaf.
    let key = "k".repeat(100);
    let leaves: Map<String, Value> = (0..2_000).map(|i| (format!("l{i}"), json!(i))).collect();
    let values = json!({ key.clone(): leaves });
    let error = check("r", &schema(), Some(&values)).unwrap_err();
    assert!(
        matches!(error, ValueError::TooManyKeys { max: 512 }),
        "{error}"
    );
    let values = json!({ key: {"a": 1} });
    let error = check("r", &schema(), Some(&values)).unwrap_err();
    assert!(
        matches!(error, ValueError::PathNotAllowed { .. }),
        "{error}"
    );
    assert!(error.to_string().len() < 400, "{error}");
}

#[test]
fn each_limit_is_enforced() {
    let mut deep = json!(1);
    for _ in 0..=limits::MAX_DEPTH {
        deep = json!({ "a": deep });
    }
    assert_eq!(
        check("r", &schema(), Some(&deep)),
        Err(ValueError::TooDeep {
            max: limits::MAX_DEPTH
        })
    );
    let long_key = json!({ "k".repeat(limits::MAX_KEY_BYTES + 1): 1 });
    assert!(matches!(
        check("r", &schema(), Some(&long_key)),
        Err(ValueError::KeyTooLong { .. })
    ));
    let large = json!({ "ingress": {"host": "x".repeat(limits::MAX_BYTES)} });
    assert_eq!(
        check("r", &schema(), Some(&large)),
        Err(ValueError::TooLarge {
            max: limits::MAX_BYTES
        })
    );
    let wide = json!({ "list": vec![0; limits::MAX_KEYS + 1] });
    assert_eq!(
        check("r", &schema(), Some(&wide)),
        Err(ValueError::TooManyKeys {
            max: limits::MAX_KEYS
        })
    );
}

#[test]
fn a_value_quoted_in_a_message_is_bounded() {
    let values = json!({"log": {"level": "trace".repeat(1000)}});
    let error = check("r", &schema(), Some(&values)).unwrap_err();
    assert!(matches!(error, ValueError::NotInEnum { .. }), "{error}");
    assert!(error.to_string().len() < 300, "{error}");
}

#[test]
fn an_object_where_a_scalar_belongs_is_the_wrong_type() {
    let values = json!({"replicaCount": {"a": 1}});
    let error = check("r", &schema(), Some(&values)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("must be an integer, not an object"),
        "{error}"
    );
}

#[test]
fn pattern_must_match_in_full() {
    let values = json!({"ingress": {"host": "ok.example/../x"}});
    assert!(matches!(
        check("r", &schema(), Some(&values)),
        Err(ValueError::PatternMismatch { .. })
    ));
}

#[test]
fn merge_overlays_objects_and_replaces_scalars() {
    let defaults = json!({"replicaCount": 1, "ingress": {"host": "d", "tls": true}});
    let tenant = json!({"ingress": {"host": "t"}});
    assert_eq!(
        merge(Some(&defaults), Some(&tenant)),
        json!({"replicaCount": 1, "ingress": {"host": "t", "tls": true}})
    );
    assert_eq!(merge(None, None), json!({}));
}

#[test]
fn set_path_creates_objects() {
    let mut root = json!({"a": 1});
    set_path(&mut root, "hub.secret.name", json!("s"));
    set_path(&mut root, "a.b", json!(2));
    assert_eq!(
        root,
        json!({"a": {"b": 2}, "hub": {"secret": {"name": "s"}}})
    );
}
