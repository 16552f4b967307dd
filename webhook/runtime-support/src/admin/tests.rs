//! The admin endpoints' answers.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use axum::{Router, body::Body};
use http::StatusCode;
use tower::ServiceExt as _;

use super::{Exposition, Readiness, router};

struct Counter;

impl Exposition for Counter {
    fn encode(&self) -> Result<String, std::fmt::Error> {
        Ok("# TYPE probes counter\nprobes_total 1\n# EOF\n".into())
    }
}

struct Flag(AtomicBool);

impl Readiness for Flag {
    fn check(&self) -> Result<String, String> {
        if self.0.load(Ordering::Acquire) {
            Ok("caches warm".into())
        } else {
            Err("caches are still syncing".into())
        }
    }
}

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

fn endpoints(ready: bool) -> (Router, Arc<Flag>) {
    let flag = Arc::new(Flag(AtomicBool::new(ready)));
    (router(Arc::new(Counter), flag.clone()), flag)
}

#[tokio::test]
async fn healthz_is_always_ok() {
    let (router, _) = endpoints(false);
    assert_eq!(
        get(&router, "/healthz").await,
        (StatusCode::OK, "ok\n".into())
    );
}

#[tokio::test]
async fn readyz_says_what_it_waits_for_until_the_role_is_ready() {
    let (router, flag) = endpoints(false);
    assert_eq!(
        get(&router, "/readyz").await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: caches are still syncing\n".into()
        )
    );
    flag.0.store(true, Ordering::Release);
    assert_eq!(
        get(&router, "/readyz").await,
        (StatusCode::OK, "ready: caches warm\n".into())
    );
    flag.0.store(false, Ordering::Release);
    assert_eq!(
        get(&router, "/readyz").await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
}

#[tokio::test]
async fn metrics_are_openmetrics_text() {
    let (router, _) = endpoints(true);
    let response = router
        .oneshot(http::Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[http::header::CONTENT_TYPE],
        super::METRICS_CONTENT_TYPE
    );
}
