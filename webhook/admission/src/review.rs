//! AdmissionReview in and out.
//!
//! The body is decoded once, straight into typed structs: the envelope borrows the object
//! and its old version as raw JSON, each is checked by [`shape`] before it is decoded into a
//! Workspace, and nothing is re-serialized on the way. The answer is written the same way.

use axum::{
    http::StatusCode,
    response::{IntoResponse, Response},
};
use k8s_openapi::api::authentication::v1::UserInfo;
use providers_shared::{
    admission::Operation,
    api::{GROUP, Workspace},
    text::{quoted, shown},
};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{shape, without_managed_fields};

/// The longest request UID accepted (the API server sends a UUID).
const MAX_UID_BYTES: usize = 128;

/// The only AdmissionReview version the webhook configurations ask for.
pub const API_VERSION: &str = "admission.k8s.io/v1";

/// A body that cannot be decided at all: answered with HTTP 400 and this text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReviewError {
    #[error("the request body is not a JSON AdmissionReview: {0}")]
    NotJson(String),
    #[error("the AdmissionReview has no request")]
    NoRequest,
    #[error("the AdmissionReview is {0}, not {API_VERSION}")]
    WrongVersion(String),
    #[error("{}", too_large())]
    TooLarge,
    #[error("the request body could not be read: {0}")]
    Unreadable(String),
}

/// The largest AdmissionReview read: an object up to the API server's 3 MiB request limit,
/// its stored version (etcd keeps at most 1.5 MiB), and the envelope, as long as few of
/// their characters are escaped. One larger is answered without being read ([`super::body`]).
pub const BODY_LIMIT: usize = 6 * 1024 * 1024;

/// Why a review over [`BODY_LIMIT`] is not read, in an AdmissionReview denial or
/// an HTTP 413.
pub fn too_large() -> String {
    format!(
        "the AdmissionReview is larger than the {} MiB this webhook reads: the Workspace, its stored version and the requester's identity are too large (in the API server's JSON, each &, < and > and each byte that is not UTF-8 takes six bytes); a Workspace is far smaller (spec.values holds at most 32 KiB): send a smaller one",
        BODY_LIMIT / (1024 * 1024)
    )
}

/// What cannot be decoded is the caller's error: HTTP 400 (413 when it is too large) with
/// the reason as text.
impl IntoResponse for ReviewError {
    fn into_response(self) -> Response {
        let status = match self {
            ReviewError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::BAD_REQUEST,
        };
        (status, self.to_string()).into_response()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReviewIn<'a> {
    #[serde(default)]
    api_version: String,
    #[serde(borrow)]
    request: Option<RequestIn<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestIn<'a> {
    uid: String,
    kind: KindIn,
    #[serde(default)]
    sub_resource: Option<String>,
    operation: String,
    #[serde(default, borrow)]
    user_info: Option<&'a RawValue>,
    #[serde(default, borrow)]
    object: Option<&'a RawValue>,
    #[serde(default, borrow)]
    old_object: Option<&'a RawValue>,
    #[serde(default)]
    dry_run: Option<bool>,
}

#[derive(Deserialize)]
struct KindIn {
    #[serde(default)]
    group: String,
    #[serde(default)]
    kind: String,
}

/// A decoded review.
pub enum Review {
    /// A Workspace write to decide.
    Workspace(Box<WorkspaceReview>),
    /// A review this webhook does not decide (another kind, operation or subresource, or an
    /// object that is not a Workspace): denied with this message. `user` is the requester's
    /// name, bounded for the log (see [`logged_user`]).
    Refused {
        uid: String,
        user: String,
        message: String,
    },
}

/// A review of a Workspace write.
pub struct WorkspaceReview {
    pub uid: String,
    pub operation: Operation,
    pub user: UserInfo,
    pub object: Workspace,
    pub old: Option<Workspace>,
    pub dry_run: bool,
}

impl WorkspaceReview {
    /// The requester's name for a log line (see [`logged_user`]).
    pub fn logged_user(&self) -> String {
        logged_user(&self.user)
    }

    /// `namespace/name` of the object, bounded for logs (the mutating webhook sees names
    /// before the API server has checked them).
    pub fn key(&self) -> String {
        let meta = &self.object.metadata;
        providers_shared::text::object_key(
            &shown(meta.namespace.as_deref().unwrap_or_default()),
            &shown(meta.name.as_deref().unwrap_or_default()),
        )
    }
}

/// The most bytes of a requester's name a log line carries.
const LOGGED_USER_BYTES: usize = 256;

/// The requester's name for a log line: bounded, since the API server passes on whatever
/// name its authenticator produced. The log's formatter escapes it (as a quoted field), so
/// it is left unescaped here and every line shows a name the same way.
pub fn logged_user(user: &UserInfo) -> String {
    providers_shared::text::truncated(
        user.username.as_deref().unwrap_or_default(),
        LOGGED_USER_BYTES,
    )
}

/// Whether `uid` is made like the UUID the API server sends: letters, digits and '-', at
/// least one and at most [`MAX_UID_BYTES`]. The UID goes into every log line about the
/// review.
pub fn uid_is_well_formed(uid: &str) -> bool {
    !uid.is_empty()
        && uid.len() <= MAX_UID_BYTES
        && uid.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Decodes the body of a POST to /mutate or /validate.
pub fn decode(body: &[u8]) -> Result<Review, ReviewError> {
    let review: ReviewIn<'_> =
        serde_json::from_slice(body).map_err(|e| ReviewError::NotJson(bounded_error(&e)))?;
    if review.api_version != API_VERSION {
        return Err(ReviewError::WrongVersion(quoted(&review.api_version)));
    }
    let request = review.request.ok_or(ReviewError::NoRequest)?;
    if request.uid.len() > MAX_UID_BYTES {
        return Err(ReviewError::NotJson(format!(
            "request.uid is longer than {MAX_UID_BYTES} bytes"
        )));
    }
    // The UID goes into every log line about the review: only what a UUID is made of, and
    // never empty, so that every line names its review.
    if !uid_is_well_formed(&request.uid) {
        return Err(ReviewError::NotJson(
            "request.uid must be letters, digits and '-', at least one (the API server sends a UUID)"
                .to_owned(),
        ));
    }
    let user = match user_info(request.user_info) {
        Ok(user) => user,
        // Denied in an answer rather than with HTTP 400, which the API server reports to
        // its caller only as "rejected for an unknown reason".
        Err(message) => {
            return Ok(Review::Refused {
                uid: request.uid,
                user: String::new(),
                message,
            });
        }
    };
    Ok(match workspace_write(&request) {
        Ok(write) => Review::Workspace(Box::new(WorkspaceReview {
            uid: request.uid,
            operation: write.operation,
            user,
            object: write.object,
            old: write.old,
            dry_run: request.dry_run.unwrap_or(false),
        })),
        Err(message) => Review::Refused {
            user: logged_user(&user),
            uid: request.uid,
            message,
        },
    })
}

/// The requester, once its shape is within bounds: the API server passes on what its
/// authenticator produced, and a million groups would otherwise be decoded (at many times
/// their size) before anything else is looked at.
fn user_info(raw: Option<&RawValue>) -> Result<UserInfo, String> {
    let Some(raw) = raw else {
        return Ok(UserInfo::default());
    };
    shape::check(raw, shape::USER_INFO).map_err(|refusal| {
        format!(
            "request.userInfo: {refusal}: the requester carries more groups or extra attributes than this webhook reviews; make the write as an identity with fewer"
        )
    })?;
    serde_json::from_str(raw.get())
        .map_err(|e| format!("request.userInfo cannot be read: {}", bounded_error(&e)))
}

/// What a review asks to write, when it is a Workspace write this webhook decides.
struct WorkspaceWrite {
    operation: Operation,
    object: Workspace,
    old: Option<Workspace>,
}

fn workspace_write(request: &RequestIn<'_>) -> Result<WorkspaceWrite, String> {
    if request.kind.group != GROUP || request.kind.kind != "Workspace" {
        return Err(format!(
            "this webhook reviews {GROUP}/Workspace only, not {}/{}: check the webhook configuration's rules",
            quoted(&request.kind.group),
            quoted(&request.kind.kind)
        ));
    }
    if request
        .sub_resource
        .as_deref()
        .is_some_and(|s| !s.is_empty())
    {
        return Err(
            "this webhook does not review subresources: check the webhook configuration's rules"
                .to_owned(),
        );
    }
    let operation = match request.operation.as_str() {
        "CREATE" => Operation::Create,
        "UPDATE" => Operation::Update,
        other => {
            return Err(format!(
                "this webhook reviews CREATE and UPDATE only, not {}",
                quoted(other)
            ));
        }
    };
    let object = request
        .object
        .ok_or_else(|| "the AdmissionReview has no object".to_owned())?;
    let object =
        workspace(object).map_err(|e| format!("the object is not a valid Workspace: {e}"))?;
    let old = match request.old_object {
        None => None,
        Some(raw) if raw.get() == "null" => None,
        Some(raw) => {
            Some(workspace(raw).map_err(|e| format!("the stored Workspace cannot be read: {e}"))?)
        }
    };
    Ok(WorkspaceWrite {
        operation,
        object,
        old,
    })
}

/// A Workspace from raw JSON, once its shape is within bounds. Its managed fields are left
/// out: no decision reads them, and they cost more to decode than the rest.
fn workspace(raw: &RawValue) -> Result<Workspace, String> {
    shape::check(raw, shape::WORKSPACE)
        .map_err(|refusal| format!("{refusal}; {}", refusal.error.workspace_remedy()))?;
    without_managed_fields::from_str(raw.get()).map_err(|error| {
        let located = without_managed_fields::error_at_path::<Workspace>(raw.get())
            .unwrap_or_else(|| error.to_string());
        // serde quotes what it could not take (an unknown enum variant, a string of the
        // wrong type) as it was sent: control characters are escaped before the message
        // reaches a log line or a terminal.
        format!(
            "{}; write each field as the Workspace schema has it (kubectl explain workspace.spec)",
            providers_shared::text::shown_with(&located, 256)
        )
    })
}

/// A decoding error for a message: serde quotes the input it could not take (a string of
/// any length, say), so only the start of the text is kept, control characters escaped.
fn bounded_error(error: &serde_json::Error) -> String {
    providers_shared::text::shown_with(&error.to_string(), 256)
}

#[cfg(test)]
mod tests;
