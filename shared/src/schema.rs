//! Schema helpers for fields whose shape the API leaves open.

use schemars::{Schema, SchemaGenerator, json_schema};

/// A JSON object of any shape (chart values): kept as written by the apiserver.
pub fn free_form_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}
