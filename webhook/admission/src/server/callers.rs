//! Who may call the webhook: TLS client certificates signed by a CA the platform names,
//! whose subject is on an allowlist. Anything else is refused during the handshake, before
//! a single byte of HTTP is read, so an unauthenticated caller gets no answer at all — in
//! particular no sealed plan.
//!
//! The API server presents such a certificate when its admission configuration gives it
//! one (`WebhookAdmission` with a kubeconfig whose user has `client-certificate`). The CA
//! file is re-read when it changes, like the serving certificate.

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
};

use providers_runtime::locks::ReadWriteLocked;
use rustls::{
    DigitallySignedStruct, DistinguishedName, Error, RootCertStore, SignatureScheme,
    client::danger::HandshakeSignatureValid,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, UnixTime, pem::PemObject},
    server::{
        WebPkiClientVerifier,
        danger::{ClientCertVerified, ClientCertVerifier},
    },
};
use sha2::{Digest, Sha256};
use x509_parser::{extensions::GeneralName, prelude::FromDer};

/// The callers the webhook answers.
#[derive(Clone, Debug)]
pub struct ClientAuth {
    /// The CA (PEM, one or more certificates) that signs the callers' certificates.
    pub ca_file: PathBuf,
    /// The subject common names or DNS names a caller's certificate must carry one of.
    pub allowed: Vec<String>,
}

/// Why the callers' CA could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CallerError {
    #[error("cannot read the client CA {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the client CA {path} holds no usable PEM CERTIFICATE: {reason}")]
    Certificate { path: PathBuf, reason: String },
    #[error("no --allowed-client names: say which certificate subjects may call the webhook")]
    NoAllowedNames,
}

/// The verifier rustls asks on every handshake.
pub struct Callers {
    ca_file: PathBuf,
    allowed: Vec<String>,
    provider: Arc<CryptoProvider>,
    current: RwLock<(Arc<dyn ClientCertVerifier>, [u8; 32])>,
}

impl fmt::Debug for Callers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Callers")
            .field("ca_file", &self.ca_file)
            .field("allowed", &self.allowed)
            .finish()
    }
}

impl Callers {
    /// Loads the CA; an error here means the server cannot start.
    pub fn load(auth: &ClientAuth, provider: Arc<CryptoProvider>) -> Result<Self, CallerError> {
        if auth.allowed.is_empty() {
            return Err(CallerError::NoAllowedNames);
        }
        let (verifier, digest) = read_verifier(&auth.ca_file, &provider)?;
        Ok(Self {
            ca_file: auth.ca_file.clone(),
            allowed: auth.allowed.clone(),
            provider,
            current: RwLock::new((verifier, digest)),
        })
    }

    /// The CA file, for the reload watch.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// Re-reads the CA; applies it when it changed and is usable. Says whether it applied.
    pub fn reload_if_changed(&self) -> Result<bool, CallerError> {
        let pem = std::fs::read(&self.ca_file).map_err(|source| CallerError::Read {
            path: self.ca_file.clone(),
            source,
        })?;
        let digest: [u8; 32] = Sha256::digest(&pem).into();
        if self.verifier().1 == digest {
            return Ok(false);
        }
        let verifier = verifier_of(&self.ca_file, &pem, &self.provider)?;
        *self.current.write_locked() = (verifier, digest);
        Ok(true)
    }

    fn verifier(&self) -> (Arc<dyn ClientCertVerifier>, [u8; 32]) {
        self.current.read_locked().clone()
    }

    /// Whether the certificate's subject common name, or one of its DNS names, is allowed.
    fn subject_allowed(&self, certificate: &CertificateDer<'_>) -> bool {
        let Ok((_, parsed)) = x509_parser::certificate::X509Certificate::from_der(certificate)
        else {
            return false;
        };
        let common_names = parsed
            .subject()
            .iter_common_name()
            .filter_map(|cn| cn.as_str().ok());
        let dns_names: Vec<&str> = parsed
            .subject_alternative_name()
            .ok()
            .flatten()
            .map(|san| {
                san.value
                    .general_names
                    .iter()
                    .filter_map(|name| match name {
                        GeneralName::DNSName(dns) => Some(*dns),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        common_names
            .chain(dns_names)
            .any(|name| self.allowed.iter().any(|allowed| allowed == name))
    }
}

fn read_verifier(
    path: &Path,
    provider: &Arc<CryptoProvider>,
) -> Result<(Arc<dyn ClientCertVerifier>, [u8; 32]), CallerError> {
    let pem = std::fs::read(path).map_err(|source| CallerError::Read {
        path: path.to_owned(),
        source,
    })?;
    let digest = Sha256::digest(&pem).into();
    Ok((verifier_of(path, &pem, provider)?, digest))
}

fn verifier_of(
    path: &Path,
    pem: &[u8],
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, CallerError> {
    let invalid = |reason: String| CallerError::Certificate {
        path: path.to_owned(),
        reason,
    };
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(pem) {
        let certificate = certificate.map_err(|e| invalid(e.to_string()))?;
        roots.add(certificate).map_err(|e| invalid(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(invalid("no certificate in the file".into()));
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| invalid(e.to_string()))
}

impl ClientCertVerifier for Callers {
    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        // No hints: a client with one certificate sends it whatever the hints say.
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        let verified = self
            .verifier()
            .0
            .verify_client_cert(end_entity, intermediates, now)?;
        if !self.subject_allowed(end_entity) {
            return Err(Error::General(
                "the client certificate's subject is not among the allowed webhook callers".into(),
            ));
        }
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.verifier().0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.verifier().0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.verifier().0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests;
