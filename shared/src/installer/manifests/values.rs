//! How a plan's chart values reach the runner: in the Job's Pod template when they are
//! small, else in a Secret.

use std::collections::BTreeMap;

use k8s_openapi::{ByteString, api::core::v1::Secret};

use crate::{
    api::Plan,
    installer::names::{self, AttemptNames},
};

use super::marks::Marks;

/// The chart values of a plan, as the `values.yaml` Helm reads: JSON, which is YAML but
/// for a few characters (see [`crate::text::yaml_safe`]).
pub fn values_text(values: &serde_json::Value) -> String {
    match values {
        serde_json::Value::Null => "{}".to_owned(),
        values => crate::text::yaml_safe(values.to_string()),
    }
}

/// Whether a plan's values travel in the Job's Pod template (a downwardAPI volume) rather
/// than in a values Secret: one object fewer to create and delete per attempt.
pub fn values_in_job(values: &serde_json::Value) -> bool {
    values_text(values).len() <= names::VALUES_ANNOTATION_LIMIT
}

/// The Secret that carries `values.yaml` to the runner when the values are too large for
/// the Job's Pod template.
pub fn values_secret(
    plan: &Plan,
    values: &serde_json::Value,
    names: &AttemptNames,
    marks: &Marks,
) -> Secret {
    Secret {
        metadata: marks.meta(&names.values, &plan.namespace),
        type_: Some("Opaque".into()),
        immutable: Some(true),
        data: Some(BTreeMap::from([(
            names::VALUES_FILE.to_owned(),
            ByteString(values_text(values).into_bytes()),
        )])),
        ..Default::default()
    }
}
