//! AdmissionReview in and out.
//!
//! The body is decoded once, straight into typed structs: the envelope borrows the object
//! and its old version as raw JSON, each is checked by [`shape`] before it is decoded into a
//! Workspace, and nothing is re-serialized on the way. The answer is written the same way.

use base64::{Engine, engine::general_purpose::STANDARD};
use k8s_openapi::api::authentication::v1::UserInfo;
use providers::{
    admission::{Denial, Operation},
    api::{GROUP, Workspace},
    text::{quoted, shown},
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::shape;

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
    #[serde(default)]
    user_info: UserInfo,
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
    /// object that is not a Workspace): denied with this message.
    Refused { uid: String, message: String },
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
    /// `namespace/name` of the object, bounded for logs (the mutating webhook sees names
    /// before the API server has checked them).
    pub fn key(&self) -> String {
        let meta = &self.object.metadata;
        format!(
            "{}/{}",
            shown(meta.namespace.as_deref().unwrap_or_default()),
            shown(meta.name.as_deref().unwrap_or_default())
        )
    }
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
    Ok(match workspace_review(&request) {
        Ok(review) => Review::Workspace(Box::new(review)),
        Err(message) => Review::Refused {
            uid: request.uid,
            message,
        },
    })
}

fn workspace_review(request: &RequestIn<'_>) -> Result<WorkspaceReview, String> {
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
    Ok(WorkspaceReview {
        uid: request.uid.clone(),
        operation,
        user: request.user_info.clone(),
        object,
        old,
        dry_run: request.dry_run.unwrap_or(false),
    })
}

/// A Workspace from raw JSON, once its shape is within bounds.
fn workspace(raw: &RawValue) -> Result<Workspace, String> {
    shape::check(raw, shape::WORKSPACE).map_err(|e| e.to_string())?;
    serde_json::from_str(raw.get()).map_err(|e| bounded_error(&e))
}

/// A decoding error for a message: serde quotes the input it could not take (a string of
/// any length, say), so only the start of the text is kept.
fn bounded_error(error: &serde_json::Error) -> String {
    providers::text::truncated(&error.to_string(), 256)
}

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

#[cfg(test)]
mod tests {
    use super::*;
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
            Ok(Review::Refused { uid, message }) => {
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
        assert!(
            refusal_message(&review_json("Pod", "CREATE", workspace())).contains("Workspace only")
        );
        assert!(
            refusal_message(&review_json("Workspace", "DELETE", workspace()))
                .contains("CREATE and UPDATE only")
        );
        let mut broken = workspace();
        broken["spec"] = json!({"recipe": 5});
        assert!(
            refusal_message(&review_json("Workspace", "CREATE", broken))
                .contains("not a valid Workspace")
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
        assert!(message.contains("more than 20000 entries"), "{message}");
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
}
