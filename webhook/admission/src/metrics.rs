//! Prometheus metrics of the admission webhook, served on the admin port's `GET /metrics`
//! (`providers_runtime::admin`).

use std::{fmt::Write as _, time::Duration};

use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::{Registry, Unit},
};

use providers_runtime::admin::{self, Exposition};

use crate::stored_values::IndexGauges;

pub mod certificates;

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KeyLabels {
    key_id: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CertificateLabels {
    certificate: String,
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
    sealing_key: Family<KeyLabels, Gauge>,
    certificate_expiry: Family<CertificateLabels, Gauge>,
    /// What the index of stored PlanValues shows.
    pub stored_values: IndexGauges,
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
        let sealing_key = Family::<KeyLabels, Gauge>::default();
        registry.register(
            "sealing_key",
            "1 for the ID of the key this replica seals plans with",
            sealing_key.clone(),
        );
        let certificate_expiry = Family::<CertificateLabels, Gauge>::default();
        registry.register_with_unit(
            "certificate_expiry_timestamp",
            "When a certificate the webhook uses expires (Unix time): serving (the leaf), serving-ca (the rest of its chain and ca.crt beside it), callers-ca (the API server's client CA); for a file of several, the earliest",
            Unit::Seconds,
            certificate_expiry.clone(),
        );
        let stored_values = IndexGauges::default();
        registry.register(
            "stored_values_known",
            "PlanValues objects this replica's metadata watch holds (values it checked are sealed again without a write)",
            stored_values.known.clone(),
        );
        registry.register(
            "stored_values_current",
            "1 while this replica's PlanValues index answers (listed, its watch not failed since); 0 while every seal asks the API server",
            stored_values.current.clone(),
        );
        Self {
            registry,
            requests,
            durations,
            denials,
            sealing_key,
            certificate_expiry,
            stored_values,
        }
    }

    /// Says which key this replica seals with.
    pub fn sealing_with(&self, key_id: &str) {
        self.sealing_key.clear();
        self.sealing_key
            .get_or_create(&KeyLabels {
                key_id: key_id.to_owned(),
            })
            .set(1);
    }

    /// Sets when `certificate` (`serving`, `serving-ca`, `callers-ca`) expires, or takes
    /// the series out when there is none.
    pub fn certificate_expires(&self, certificate: &str, not_after: Option<i64>) {
        let labels = CertificateLabels {
            certificate: certificate.to_owned(),
        };
        match not_after {
            Some(at) => {
                self.certificate_expiry.get_or_create(&labels).set(at);
            }
            None => {
                self.certificate_expiry.remove(&labels);
            }
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
}

impl Exposition for Metrics {
    fn encode(&self) -> Result<String, std::fmt::Error> {
        admin::openmetrics(&self.registry)
    }
}

#[cfg(test)]
mod tests;
