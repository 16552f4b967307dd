//! The admission webhook's metrics as Prometheus reads them.

use super::*;

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
    assert!(text.ends_with("# EOF\n"), "{text}");
}
