//! What the API double answers: an HTTP code and a JSON body, and the `Status` of a
//! refusal as the API server words it.

use serde_json::{Value, json};

use super::request::Key;

/// What the double answers: an HTTP code and a JSON body.
pub struct Answer {
    pub code: u16,
    pub body: Value,
}

impl Answer {
    pub fn ok(body: Value) -> Self {
        Self { code: 200, body }
    }

    pub fn created(body: Value) -> Self {
        Self { code: 201, body }
    }

    /// A `Status` as the API server gives it for a refusal.
    pub fn status(code: u16, reason: &str, message: &str) -> Self {
        Self {
            code,
            body: json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": reason,
                "code": code,
            }),
        }
    }

    pub fn not_found(key: &Key) -> Self {
        Self::status(
            404,
            "NotFound",
            &format!("{} \"{}\" not found", key.plural, key.name),
        )
    }

    pub fn conflict(key: &Key, why: &str) -> Self {
        Self::status(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {} \"{}\": {why}",
                key.plural, key.name
            ),
        )
    }
}
