//! The admission router over bad input, without a socket: every body gets a 4xx or a
//! denial with a clear message, never a 500 and never a panic.

use std::sync::Arc;

use axum::{body::Body, http::Request};
use http::StatusCode;
use kube::{Client, runtime::reflector};
use providers_shared::seal::{Keyring, Sealer};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::metrics::Metrics;
use super::{AppState, BODY_LIMIT, router};

fn state() -> Arc<AppState> {
    // A client for an address where nothing listens: lookups fail, as when the API
    // server is unreachable; nothing here is a stand-in for it.
    let config = kube::Config::new("https://127.0.0.1:1".parse().expect("url"));
    let client = Client::try_from(config).expect("client");
    let sealer = Sealer::from_seed([3; 32]);
    let keyring = Keyring::from(&sealer);
    Arc::new(AppState {
        client,
        sealer,
        keyring,
        allowlist: vec!["http://127.0.0.1".into()],
        recipes: reflector::store().0,
        edges: reflector::store().0,
        stored_values: super::StoredValues::new(
            providers_shared::plan_values::reseal::MARK_WINDOW,
            Default::default(),
        ),
        metrics: Arc::new(Metrics::new()),
    })
}

async fn post(path: &str, body: Vec<u8>) -> (StatusCode, Vec<u8>) {
    let request = Request::post(path)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .expect("request");
    let response = router(state(), 8 << 20)
        .oneshot(request)
        .await
        .expect("infallible");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, bytes.to_vec())
}

fn review(kind: &str, object: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "7f3c", "operation": "CREATE", "userInfo": {"username": "alice"},
            "kind": {"group": "providers.platform.dev", "version": "v1alpha1", "kind": kind},
            "resource": {"group": "providers.platform.dev", "version": "v1alpha1", "resource": "workspaces"},
            "namespace": "org-a", "name": "w", "object": object, "dryRun": false
        }
    }))
    .expect("json")
}

fn workspace() -> Value {
    json!({"apiVersion": "providers.platform.dev/v1alpha1", "kind": "Workspace",
           "metadata": {"name": "w", "namespace": "org-a"}, "spec": {"recipe": "r", "edge": "e"}})
}

/// The AdmissionResponse of a 200 answer.
fn response_of(body: &[u8]) -> Value {
    let review: Value = serde_json::from_slice(body).expect("an AdmissionReview");
    assert_eq!(review["kind"], "AdmissionReview");
    review["response"].clone()
}

#[tokio::test]
async fn malformed_json_is_a_400_with_the_reason() {
    for path in ["/mutate", "/validate"] {
        let (status, body) = post(path, b"{\"kind\": \"AdmissionReview\", ".to_vec()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(String::from_utf8_lossy(&body).contains("not a JSON AdmissionReview"));
    }
}

#[tokio::test]
async fn a_truncated_review_is_a_400() {
    let mut body = review("Workspace", workspace());
    body.truncate(body.len() / 2);
    assert_eq!(post("/mutate", body).await.0, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_non_utf8_body_is_a_400() {
    let (status, body) = post("/validate", vec![0xff, 0xfe, 0xfd, b'{']).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(!body.is_empty());
}

#[tokio::test]
async fn an_empty_body_is_a_400() {
    assert_eq!(post("/mutate", Vec::new()).await.0, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn an_oversized_body_is_a_413_that_names_the_limit() {
    let mut body = b"{\"pad\": \"".to_vec();
    body.resize(BODY_LIMIT + 1024, b'a');
    let (status, text) = post("/mutate", body).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let text = String::from_utf8_lossy(&text);
    assert!(
        text.contains("larger than the 6 MiB this webhook reads")
            && text.contains("send a smaller"),
        "{text}"
    );
}

/// An oversized review from the API server (its start names the UID) is denied in an
/// AdmissionReview, whose message the API server shows its caller, not with a bare 413.
#[tokio::test]
async fn an_oversized_review_is_denied_in_an_answer_the_api_server_passes_on() {
    let mut body = br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"7f3c-9a1e","object":{"spec":{"values":{"a":""#.to_vec();
    body.resize(BODY_LIMIT + 1024, b'&');
    body.extend_from_slice(br#""}}}}}"#);
    let (status, body) = post("/validate", body).await;
    assert_eq!(status, StatusCode::OK);
    let response = response_of(&body);
    assert_eq!(response["uid"], "7f3c-9a1e");
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 413);
    let message = response["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("larger than the 6 MiB this webhook reads")
            && message.contains("send a smaller one"),
        "{message}"
    );
}

#[tokio::test]
async fn a_review_of_another_kind_is_denied_with_a_message() {
    let (status, body) = post(
        "/mutate",
        review(
            "Pod",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let response = response_of(&body);
    assert_eq!(response["allowed"], false);
    assert!(
        response["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("Workspace only")
    );
    assert_eq!(response["uid"], "7f3c");
}

#[tokio::test]
async fn an_object_that_is_not_a_workspace_is_denied_with_a_message() {
    let mut object = workspace();
    object["spec"] = json!({"recipe": ["not", "a", "string"]});
    let (status, body) = post("/validate", review("Workspace", object)).await;
    assert_eq!(status, StatusCode::OK);
    let response = response_of(&body);
    assert_eq!(response["allowed"], false);
    assert!(
        response["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not a valid Workspace")
    );
}

#[tokio::test]
async fn an_unreachable_api_server_is_a_clear_retryable_denial() {
    let (status, body) = post("/mutate", review("Workspace", workspace())).await;
    assert_eq!(status, StatusCode::OK);
    let response = response_of(&body);
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 503);
    let message = response["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("spec.recipe: could not read recipe \"r\"")
            && message.contains("try again"),
        "{message}"
    );
}

#[tokio::test]
async fn a_validate_without_a_plan_is_denied() {
    let (_, body) = post("/validate", review("Workspace", workspace())).await;
    let response = response_of(&body);
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["reason"], "PlanMissing");
}
