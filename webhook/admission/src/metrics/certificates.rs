//! When the webhook's certificates expire, for `providers_webhook_certificate_expiry_timestamp_seconds`:
//! the serving certificate (the leaf of `--tls-cert`), its CA (the rest of that chain, and
//! `ca.crt` beside it, which cert-manager and the chart's self-signed mode write into the
//! same Secret) and the API server's client CA (`--client-ca`).
//!
//! The files are read again every minute, apart from the serving code's own reloads, so a
//! renewed certificate shows here within a minute and a file that cannot be read is said
//! in the log and leaves the last value.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use rustls::pki_types::{CertificateDer, pem::PemObject};
use x509_parser::prelude::FromDer;

use super::Metrics;

/// Why a certificate file gave no expiry.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: no PEM certificate: {source}")]
    Pem {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{path}: certificate {index} is not X.509: {message}")]
    Parse {
        path: PathBuf,
        index: usize,
        message: String,
    },
}

/// The `notAfter` (Unix seconds) of every certificate in a PEM file, in order.
pub fn expiries(path: &Path, pem: &[u8]) -> Result<Vec<i64>, CertificateError> {
    let mut out = Vec::new();
    for (index, der) in CertificateDer::pem_slice_iter(pem).enumerate() {
        let der = der.map_err(|source| CertificateError::Pem {
            path: path.to_owned(),
            source,
        })?;
        let (_, certificate) = x509_parser::certificate::X509Certificate::from_der(der.as_ref())
            .map_err(|e| CertificateError::Parse {
                path: path.to_owned(),
                index,
                message: e.to_string(),
            })?;
        out.push(certificate.validity().not_after.timestamp());
    }
    Ok(out)
}

/// The files the webhook serves and verifies with.
#[derive(Clone, Debug)]
pub struct CertificateFiles {
    /// `--tls-cert`: the serving chain, leaf first.
    pub serving: PathBuf,
    /// `--client-ca`, when callers are authenticated.
    pub callers_ca: Option<PathBuf>,
}

fn read(path: &Path) -> Result<Vec<i64>, CertificateError> {
    let pem = std::fs::read(path).map_err(|source| CertificateError::Read {
        path: path.to_owned(),
        source,
    })?;
    expiries(path, &pem)
}

/// Reads the files once and sets the gauges.
pub fn measure(metrics: &Metrics, files: &CertificateFiles) {
    match read(&files.serving) {
        Ok(chain) => {
            metrics.certificate_expires("serving", chain.first().copied());
            let mut authorities: Vec<i64> = chain.iter().skip(1).copied().collect();
            // The CA beside the serving pair (a kubernetes.io/tls Secret's ca.crt), if any.
            if let Some(ca) = files.serving.parent().map(|dir| dir.join("ca.crt"))
                && ca.is_file()
            {
                match read(&ca) {
                    Ok(found) => authorities.extend(found),
                    Err(error) => tracing::warn!(%error, "the serving CA's expiry"),
                }
            }
            metrics.certificate_expires("serving-ca", authorities.into_iter().min());
        }
        Err(error) => tracing::warn!(%error, "the serving certificate's expiry"),
    }
    if let Some(ca) = &files.callers_ca {
        match read(ca) {
            Ok(found) => metrics.certificate_expires("callers-ca", found.into_iter().min()),
            Err(error) => tracing::warn!(%error, "the callers' CA's expiry"),
        }
    }
}

/// Measures now and then every `every` until the process ends.
pub fn spawn(metrics: Arc<Metrics>, files: CertificateFiles, every: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            measure(&metrics, &files);
        }
    });
}
