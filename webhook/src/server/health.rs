//! Liveness (`GET /healthz`) and readiness (`GET /readyz`) probes.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use axum::{Router, extract::State, routing::get};
use http::StatusCode;

/// `GET /healthz`: 200 whenever the process answers. `GET /readyz`: 200 once `ready` is true
/// (the caller sets it when its caches are warm), 503 before.
pub fn health_router(ready: Arc<AtomicBool>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(ready)
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(ready): State<Arc<AtomicBool>>) -> (StatusCode, &'static str) {
    if ready.load(Ordering::Acquire) {
        (StatusCode::OK, "ready\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: caches are still syncing\n",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use tower::ServiceExt as _;

    async fn get(router: &Router, path: &str) -> (StatusCode, String) {
        let response = router
            .clone()
            .oneshot(http::Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn healthz_is_always_ok() {
        let router = health_router(Arc::new(AtomicBool::new(false)));
        assert_eq!(
            get(&router, "/healthz").await,
            (StatusCode::OK, "ok\n".into())
        );
    }

    #[tokio::test]
    async fn readyz_follows_the_flag() {
        let ready = Arc::new(AtomicBool::new(false));
        let router = health_router(ready.clone());
        let (status, body) = get(&router, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.starts_with("not ready"), "{body}");

        ready.store(true, Ordering::Release);
        assert_eq!(
            get(&router, "/readyz").await,
            (StatusCode::OK, "ready\n".into())
        );

        ready.store(false, Ordering::Release);
        assert_eq!(
            get(&router, "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
