//! AdmissionReview in and out: decoding with clear errors, and the responses.

use kube::core::{
    DynamicObject, Status,
    admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation as KubeOperation},
};
use providers::{
    admission::{Denial, Operation},
    api::Workspace,
};
use serde_json::Value;

/// A review that cannot be decided at all: answered with HTTP 400 and this text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReviewError {
    #[error("the request body is not a JSON AdmissionReview: {0}")]
    NotJson(String),
    #[error("the AdmissionReview has no request")]
    NoRequest,
}

/// A decoded review of a Workspace write.
pub struct WorkspaceReview {
    pub request: AdmissionRequest<DynamicObject>,
    pub operation: Operation,
    pub object: Workspace,
    pub old: Option<Workspace>,
    /// The object exactly as the API server sent it, for patches against raw JSON.
    pub raw_object: Value,
}

/// What a decodable review that this webhook does not decide becomes: a denial (HTTP 200)
/// with this message.
pub struct Refusal(pub Box<AdmissionResponse>);

/// Decodes the body of a POST to /mutate or /validate.
pub fn decode(body: &[u8]) -> Result<Result<WorkspaceReview, Refusal>, ReviewError> {
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_slice(body).map_err(|e| ReviewError::NotJson(e.to_string()))?;
    let request: AdmissionRequest<DynamicObject> =
        review.try_into().map_err(|_| ReviewError::NoRequest)?;
    Ok(workspace_review(request))
}

fn workspace_review(request: AdmissionRequest<DynamicObject>) -> Result<WorkspaceReview, Refusal> {
    let refuse = |request: &AdmissionRequest<DynamicObject>, message: String| {
        Refusal(Box::new(deny_with(
            AdmissionResponse::from(request),
            &message,
            "BadRequest",
            400,
        )))
    };
    if request.kind.group != providers::api::GROUP || request.kind.kind != "Workspace" {
        let message = format!(
            "this webhook reviews {}/Workspace only, not {}/{}: check the webhook configuration's rules",
            providers::api::GROUP,
            request.kind.group,
            request.kind.kind
        );
        return Err(refuse(&request, message));
    }
    if request
        .sub_resource
        .as_deref()
        .is_some_and(|s| !s.is_empty())
    {
        let message =
            "this webhook does not review subresources: check the webhook configuration's rules"
                .to_owned();
        return Err(refuse(&request, message));
    }
    let operation = match &request.operation {
        KubeOperation::Create => Operation::Create,
        KubeOperation::Update => Operation::Update,
        other => {
            let message = format!("this webhook reviews CREATE and UPDATE only, not {other:?}");
            return Err(refuse(&request, message));
        }
    };
    let Some(object) = &request.object else {
        return Err(refuse(
            &request,
            "the AdmissionReview has no object".to_owned(),
        ));
    };
    let raw_object = match serde_json::to_value(object) {
        Ok(value) => value,
        Err(e) => return Err(refuse(&request, format!("the object cannot be read: {e}"))),
    };
    let object: Workspace = match serde_json::from_value(raw_object.clone()) {
        Ok(workspace) => workspace,
        Err(e) => {
            return Err(refuse(
                &request,
                format!("the object is not a valid Workspace: {e}"),
            ));
        }
    };
    let old = match request
        .old_object
        .as_ref()
        .map(|o| serde_json::to_value(o).and_then(serde_json::from_value))
    {
        None => None,
        Some(Ok(workspace)) => Some(workspace),
        Some(Err(e)) => {
            return Err(refuse(
                &request,
                format!("the stored Workspace cannot be read: {e}"),
            ));
        }
    };
    Ok(WorkspaceReview {
        request,
        operation,
        object,
        old,
        raw_object,
    })
}

/// A denial with the webhook's message, a machine-readable reason and a code.
pub fn deny(review: &WorkspaceReview, denial: &Denial) -> AdmissionResponse {
    deny_with(
        AdmissionResponse::from(&review.request),
        &denial.to_string(),
        denial.reason(),
        denial.code(),
    )
}

fn deny_with(
    response: AdmissionResponse,
    message: &str,
    reason: &str,
    code: u16,
) -> AdmissionResponse {
    let mut response = response.deny(message);
    response.result = Status::failure(message, reason).with_code(code);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review_json(kind: &str, operation: &str, object: Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
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
        serde_json::json!({
            "apiVersion": "providers.platform.dev/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "w", "namespace": "org-a"},
            "spec": {"recipe": "r", "edge": "e"}
        })
    }

    fn refusal_message(body: &[u8]) -> String {
        match decode(body) {
            Ok(Err(Refusal(response))) => {
                assert!(!response.allowed);
                response.result.message
            }
            Ok(Ok(_)) => panic!("decoded"),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_workspace_review_decodes() {
        let review = decode(&review_json("Workspace", "CREATE", workspace()))
            .unwrap()
            .ok()
            .unwrap();
        assert_eq!(review.operation, Operation::Create);
        assert_eq!(review.object.spec.recipe, "r");
        assert_eq!(review.raw_object["spec"]["edge"], "e");
    }

    #[test]
    fn undecodable_bodies_are_client_errors() {
        let cases: [(&[u8], &str); 5] = [
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
        ];
        for (body, text) in cases {
            let error = decode(body)
                .err()
                .unwrap_or_else(|| panic!("{body:?} decoded"));
            assert!(error.to_string().contains(text), "{error}");
        }
    }

    #[test]
    fn reviews_this_webhook_does_not_decide_are_denied_with_a_reason() {
        assert!(
            refusal_message(&review_json("Pod", "CREATE", workspace())).contains("Workspace only")
        );
        assert!(
            refusal_message(&review_json("Workspace", "DELETE", workspace()))
                .contains("CREATE and UPDATE only")
        );
        let mut broken = workspace();
        broken["spec"] = serde_json::json!({"recipe": 5});
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
}
