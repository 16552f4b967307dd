//! Prometheus metrics of the admission webhook, served on `GET /metrics` in the OpenMetrics
//! text format.

use std::{fmt::Write as _, sync::Arc, time::Duration};

use axum::{Router, extract::State, http::header, response::IntoResponse, routing::get};
use http::StatusCode;
use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder},
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::{Registry, Unit},
};

/// The content type of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How an admission request ended.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Outcome {
    /// Allowed without changes.
    Allowed,
    /// Denied with a reason.
    Denied,
    /// Allowed with a JSON patch.
    Patched,
    /// Not decided: the review could not be decoded or a dependency failed.
    Error,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::Patched => "patched",
            Self::Error => "error",
        }
    }
}

impl EncodeLabelValue for Outcome {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    endpoint: String,
    outcome: Outcome,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

/// Upper bounds in seconds: a decision from caches takes well under a millisecond, one that
/// waits for a SubjectAccessReview takes milliseconds to seconds.
const DURATION_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The webhook's metrics. Label values must come from a small fixed set (endpoint paths,
/// denial reason codes), never from request content, or the series count grows without bound.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<EndpointLabels, Histogram, fn() -> Histogram>,
    denials: Family<ReasonLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("providers_webhook");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "admission_requests",
            "Admission requests answered, by endpoint and outcome",
            requests.clone(),
        );
        let durations =
            Family::<EndpointLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                duration_histogram,
            );
        registry.register_with_unit(
            "admission_request_duration",
            "Time from receiving an admission request to answering it, by endpoint",
            Unit::Seconds,
            durations.clone(),
        );
        let denials = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "admission_denials",
            "Admission requests denied, by reason",
            denials.clone(),
        );
        Self {
            registry,
            requests,
            durations,
            denials,
        }
    }

    /// Records one answered request on `endpoint` (e.g. `"/mutate"`).
    pub fn record(&self, endpoint: &str, outcome: Outcome, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                endpoint: endpoint.to_owned(),
                outcome,
            })
            .inc();
        self.durations
            .get_or_create(&EndpointLabels {
                endpoint: endpoint.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one denial; `reason` is the denial's reason code (e.g. `"EditForbidden"`).
    pub fn denied(&self, reason: &str) {
        self.denials
            .get_or_create(&ReasonLabels {
                reason: reason.to_owned(),
            })
            .inc();
    }

    /// All metrics in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// `GET /metrics`.
pub fn metrics_router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(serve_metrics))
        .with_state(metrics)
}

async fn serve_metrics(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    match metrics.encode() {
        Ok(text) => (StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], text),
        // Writing to a String does not fail and no label encoder here fails; kept total anyway.
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            String::from("cannot encode the metrics\n"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use tower::ServiceExt as _;

    #[test]
    fn encode_has_the_recorded_series() {
        let metrics = Metrics::new();
        metrics.record("/mutate", Outcome::Patched, Duration::from_micros(300));
        metrics.record("/mutate", Outcome::Patched, Duration::from_millis(30));
        metrics.record("/validate", Outcome::Denied, Duration::from_secs(3));
        metrics.denied("EditForbidden");
        let text = metrics.encode().unwrap();

        for line in [
            "# TYPE providers_webhook_admission_requests counter",
            r#"providers_webhook_admission_requests_total{endpoint="/mutate",outcome="patched"} 2"#,
            r#"providers_webhook_admission_requests_total{endpoint="/validate",outcome="denied"} 1"#,
            "# TYPE providers_webhook_admission_request_duration_seconds histogram",
            "# UNIT providers_webhook_admission_request_duration_seconds seconds",
            r#"providers_webhook_admission_request_duration_seconds_count{endpoint="/mutate"} 2"#,
            r#"providers_webhook_admission_request_duration_seconds_bucket{le="0.0005",endpoint="/mutate"} 1"#,
            r#"providers_webhook_admission_request_duration_seconds_bucket{le="0.05",endpoint="/mutate"} 2"#,
            r#"providers_webhook_admission_request_duration_seconds_bucket{le="2.5",endpoint="/validate"} 0"#,
            r#"providers_webhook_admission_request_duration_seconds_bucket{le="5.0",endpoint="/validate"} 1"#,
            r#"providers_webhook_admission_denials_total{reason="EditForbidden"} 1"#,
            "# EOF",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in:\n{text}"
            );
        }
        assert!(!text.contains("outcome=\"allowed\""), "{text}");
    }

    #[tokio::test]
    async fn metrics_route_serves_openmetrics() {
        let metrics = Arc::new(Metrics::new());
        metrics.record("/validate", Outcome::Allowed, Duration::from_millis(1));
        let response = metrics_router(metrics)
            .oneshot(http::Request::get("/metrics").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_TYPE], CONTENT_TYPE);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            text.contains(r#"providers_webhook_admission_requests_total{endpoint="/validate",outcome="allowed"} 1"#),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
