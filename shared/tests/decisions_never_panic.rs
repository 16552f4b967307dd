//! Property: whatever JSON a tenant's request carries, the admission decision, the values
//! check and plan verification answer with a value or a denial — they never panic.

use k8s_openapi::{api::authentication::v1::UserInfo, jiff::Timestamp};
use proptest::prelude::*;
use providers_shared::{
    admission::{Operation, Request, binding_of, mutate, validate::validate},
    api::{ValueField, ValueType, Workspace},
    seal::{Keyring, Sealer},
    tenant_values,
    verify::verify_plan,
};
use serde_json::{Map, Value, json};

/// Any JSON value, a few levels deep, with keys and strings of any characters.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((".{0,8}", inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A Workspace-shaped object whose fields are arbitrary where a tenant controls them.
fn workspace_json() -> impl Strategy<Value = Value> {
    (
        json_value(),
        ".{0,10}",
        ".{0,10}",
        prop::option::of(".{0,6}"),
        prop::option::of(any::<i64>()),
        prop::option::of(json_value()),
        prop::option::of(json_value()),
    )
        .prop_map(|(values, recipe, edge, version, retry, plan, status)| {
            json!({
                "apiVersion": "providers.platform.dev/v1alpha1",
                "kind": "Workspace",
                "metadata": {"name": "w", "namespace": "org-a", "uid": "u1", "resourceVersion": "7"},
                "spec": {"recipe": recipe, "edge": edge, "version": version, "retry": retry,
                         "values": values, "plan": plan},
                "status": status,
            })
        })
}

fn schema() -> Vec<ValueField> {
    ["a", "a.b", "c.d.e", "f"]
        .into_iter()
        .map(|path| ValueField {
            path: path.into(),
            type_: ValueType::String,
            description: None,
            enum_: None,
            pattern: Some("[a-z]+".into()),
            max_length: Some(8),
            minimum: None,
            maximum: None,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_values_check_never_panics(values in json_value()) {
        let _ = tenant_values::check("r", &schema(), Some(&values));
    }

    #[test]
    fn the_admission_decision_never_panics(object in workspace_json(), old in workspace_json()) {
        let (Ok(object), old) = (
            serde_json::from_value::<Workspace>(object),
            serde_json::from_value::<Workspace>(old).ok(),
        ) else {
            return Ok(());
        };
        let user = UserInfo { username: Some("alice".into()), ..Default::default() };
        let sealer = Sealer::from_seed([1; 32]);
        let keyring = Keyring::from(&sealer);
        for operation in [Operation::Create, Operation::Update] {
            let request = Request {
                operation,
                user: &user,
                object: &object,
                old: old.as_ref(),
                dry_run: false,
                now: Timestamp::UNIX_EPOCH,
            };
            let _ = mutate::plan_action(&request);
            let _ = validate(&request, &keyring);
        }
        if let Some(sealed) = &object.spec.plan {
            let _ = verify_plan(sealed, &keyring, &binding_of(&object));
        }
    }
}
