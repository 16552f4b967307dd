//! Schema helpers for fields whose shape the API leaves open.

use schemars::{Schema, SchemaGenerator, json_schema};

use crate::tenant_values::limits;

/// A JSON object of any shape (chart values): kept as written by the apiserver.
pub fn free_form_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// A tenant's chart values: a JSON object of any shape, with at most
/// [`limits::MAX_KEYS`] keys at its top level. The CRD's CEL rules compare the whole object
/// (the pin of an active attempt), which a structural schema allows only for an object
/// without a schema for its members; so the bounds below the top level (depth, key length,
/// string length, no lists) are held in the API server by the `providers-values-bounds`
/// ValidatingAdmissionPolicy, and every bound by the webhook.
pub fn tenant_values(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "maxProperties": limits::MAX_KEYS
    })
}
