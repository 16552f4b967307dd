//! The answer to an AdmissionReview: allowed, patched or denied, always HTTP 200 with an
//! AdmissionReview body (the API server reads a denial from it, never from the status).

use axum::{
    http::header,
    response::{IntoResponse, Response},
};
use base64::{Engine, engine::general_purpose::STANDARD};
use providers_shared::admission::Denial;
use serde::Serialize;

use super::review::API_VERSION;

/// The answer to a review.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    uid: String,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<StatusOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    /// Base64 of the JSON patch, as the API server expects it.
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct StatusOut {
    status: &'static str,
    message: String,
    reason: String,
    code: u16,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: &'a Answer,
}

impl Answer {
    /// Admitted as it is.
    pub fn allow(uid: &str) -> Self {
        Self {
            uid: uid.to_owned(),
            allowed: true,
            status: None,
            patch_type: None,
            patch: None,
            warnings: Vec::new(),
        }
    }

    /// Admitted with warnings for the user.
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings = warnings;
        self
    }

    /// Admitted with a JSON patch.
    pub fn patched(uid: &str, patch: &json_patch::Patch) -> Result<Self, serde_json::Error> {
        let mut answer = Self::allow(uid);
        answer.patch = Some(STANDARD.encode(serde_json::to_vec(patch)?));
        answer.patch_type = Some("JSONPatch");
        Ok(answer)
    }

    /// Refused with a message, a machine-readable reason and a code.
    pub fn deny(uid: &str, message: String, reason: &str, code: u16) -> Self {
        let mut answer = Self::allow(uid);
        answer.allowed = false;
        answer.status = Some(StatusOut {
            status: "Failure",
            message,
            reason: reason.to_owned(),
            code,
        });
        answer
    }

    /// Refused for a [`Denial`].
    pub fn denial(uid: &str, denial: &Denial) -> Self {
        Self::deny(uid, denial.to_string(), denial.reason(), denial.code())
    }

    /// A review this webhook does not decide.
    pub fn refused(uid: &str, message: String) -> Self {
        Self::deny(uid, message, "BadRequest", 400)
    }

    /// A review too large to read.
    pub fn too_large(uid: &str, message: String) -> Self {
        Self::deny(uid, message, "RequestEntityTooLarge", 413)
    }

    pub fn allowed(&self) -> bool {
        self.allowed
    }

    pub fn is_patched(&self) -> bool {
        self.patch.is_some()
    }

    /// The machine-readable reason of a refusal.
    pub fn reason(&self) -> &str {
        self.status
            .as_ref()
            .map(|s| s.reason.as_str())
            .unwrap_or("")
    }

    /// The AdmissionReview that carries this answer.
    pub fn to_json(&self) -> Vec<u8> {
        let review = ReviewOut {
            api_version: API_VERSION,
            kind: "AdmissionReview",
            response: self,
        };
        // Plain strings, booleans and numbers: serializing cannot fail.
        serde_json::to_vec(&review).unwrap_or_default()
    }
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        ([(header::CONTENT_TYPE, "application/json")], self.to_json()).into_response()
    }
}
