//! The installer's metrics as Prometheus reads them.

use super::*;

#[test]
fn metrics_are_named_for_the_installer() {
    let metrics = Metrics::new();
    metrics.attempts_started.inc();
    metrics
        .attempts_failed
        .get_or_create(&ReasonLabels {
            reason: "JobFailed".into(),
        })
        .inc();
    let text = metrics.encode().unwrap();
    assert!(
        text.contains("providers_installer_attempts_started_total 1"),
        "{text}"
    );
    assert!(
        text.contains(r#"providers_installer_attempts_failed_total{reason="JobFailed"} 1"#),
        "{text}"
    );
}
