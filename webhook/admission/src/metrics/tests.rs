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

/// The serving leaf, the CA beside it and the callers' CA each get their expiry; the key
/// the replica seals with is named.
#[test]
fn certificate_expiries_and_the_sealing_key_are_exposed() {
    let dir = tempfile::tempdir().unwrap();
    let authority = |name: &str, (year, month, day): (i32, u8, u8)| {
        let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap();
        params.not_after = rcgen::date_time_ymd(year, month, day);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    };
    std::fs::write(dir.path().join("tls.crt"), authority("leaf", (2030, 1, 1))).unwrap();
    std::fs::write(dir.path().join("ca.crt"), authority("ca", (2031, 1, 1))).unwrap();
    std::fs::write(
        dir.path().join("callers.crt"),
        authority("callers", (2030, 1, 31)),
    )
    .unwrap();
    let metrics = Metrics::new();
    metrics.sealing_with("0123456789abcdef");
    certificates::measure(
        &metrics,
        &certificates::CertificateFiles {
            serving: dir.path().join("tls.crt"),
            callers_ca: Some(dir.path().join("callers.crt")),
        },
    );
    let text = metrics.encode().unwrap();
    let jan_2030 = 1_893_456_000;
    for line in [
        format!(
            r#"providers_webhook_certificate_expiry_timestamp_seconds{{certificate="serving"}} {jan_2030}"#
        ),
        format!(
            r#"providers_webhook_certificate_expiry_timestamp_seconds{{certificate="serving-ca"}} {}"#,
            jan_2030 + 365 * 86_400
        ),
        format!(
            r#"providers_webhook_certificate_expiry_timestamp_seconds{{certificate="callers-ca"}} {}"#,
            jan_2030 + 30 * 86_400
        ),
        r#"providers_webhook_sealing_key{key_id="0123456789abcdef"} 1"#.to_owned(),
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }
    // Garbage in the file is an error, not a zero.
    assert!(
        certificates::expiries(
            std::path::Path::new("x"),
            b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
        )
        .is_err()
    );
}
