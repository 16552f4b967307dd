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
    sync::{Arc, PoisonError, RwLock},
};

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
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = (verifier, digest);
        Ok(true)
    }

    fn verifier(&self) -> (Arc<dyn ClientCertVerifier>, [u8; 32]) {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
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
mod tests {
    use std::time::Duration;

    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose,
        IsCa, KeyPair, KeyUsagePurpose,
    };
    use rustls::{
        ClientConfig, RootCertStore,
        pki_types::{PrivateKeyDer, ServerName},
    };
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::TlsConnector;

    use super::*;
    use crate::server::{
        ServeOptions,
        testing::{TestServer, eventually, ring},
    };

    /// A CA for client certificates.
    struct ClientPki {
        ca: CertifiedIssuer<'static, KeyPair>,
    }

    /// A client certificate and its key, DER.
    struct Client {
        chain: Vec<CertificateDer<'static>>,
        key: Vec<u8>,
    }

    impl ClientPki {
        fn new() -> Self {
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
            params
                .distinguished_name
                .push(DnType::CommonName, "webhook client CA");
            Self {
                ca: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
            }
        }

        fn pem(&self) -> String {
            self.ca.pem()
        }

        fn client(&self, common_name: &str) -> Client {
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params
                .distinguished_name
                .push(DnType::CommonName, common_name);
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            let key = KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, &*self.ca).unwrap();
            Client {
                chain: vec![cert.der().clone()],
                key: key.serialize_der(),
            }
        }
    }

    const API_SERVER: &str = "kube-apiserver-webhook-client";

    async fn start(ca_pem: &str) -> (TestServer, PathBuf) {
        let dir = tempfile::tempdir().unwrap().keep();
        let ca_file = dir.join("client-ca.crt");
        std::fs::write(&ca_file, ca_pem).unwrap();
        let options = ServeOptions {
            reload_poll_interval: Duration::from_millis(200),
            client_auth: Some(ClientAuth {
                ca_file: ca_file.clone(),
                allowed: vec![API_SERVER.to_owned()],
            }),
            ..ServeOptions::default()
        };
        (TestServer::start(options).await, ca_file)
    }

    /// GET /hello over HTTP/1.1 with `client` (or no certificate); what came back.
    async fn hello(server: &TestServer, client: Option<&Client>) -> String {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(server.pki_ca_pem().as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let builder = ClientConfig::builder_with_provider(ring())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = match client {
            Some(client) => builder
                .with_client_auth_cert(
                    client.chain.clone(),
                    PrivateKeyDer::try_from(client.key.clone()).unwrap(),
                )
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let Ok(mut tls) = TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
        else {
            return String::new();
        };
        if tls
            .write_all(b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .is_err()
        {
            return String::new();
        }
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut answer)).await;
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn only_an_allowed_certificate_from_the_callers_ca_gets_an_answer() {
        let pki = ClientPki::new();
        let (server, _) = start(&pki.pem()).await;
        assert!(
            hello(&server, Some(&pki.client(API_SERVER)))
                .await
                .ends_with("hello")
        );
        for (who, client) in [
            ("no certificate", None),
            ("another CA", Some(ClientPki::new().client(API_SERVER))),
            ("another subject", Some(pki.client("system:masters"))),
        ] {
            let answer = hello(&server, client.as_ref()).await;
            assert!(!answer.contains("hello"), "{who}: {answer}");
            assert!(
                !answer.contains("HTTP/1.1"),
                "{who} got an HTTP answer: {answer}"
            );
        }
    }

    #[tokio::test]
    async fn a_new_callers_ca_is_picked_up_without_a_restart() {
        let (old, new) = (ClientPki::new(), ClientPki::new());
        let (server, ca_file) = start(&old.pem()).await;
        std::fs::write(&ca_file, new.pem()).unwrap();
        let client = new.client(API_SERVER);
        assert!(
            eventually(Duration::from_secs(10), || async {
                hello(&server, Some(&client)).await.ends_with("hello")
            })
            .await,
            "the new CA was not picked up"
        );
        assert!(
            !hello(&server, Some(&old.client(API_SERVER)))
                .await
                .contains("hello")
        );
    }

    #[test]
    fn a_ca_without_allowed_names_does_not_load() {
        let dir = tempfile::tempdir().unwrap();
        let ca_file = dir.path().join("ca.crt");
        std::fs::write(&ca_file, ClientPki::new().pem()).unwrap();
        let auth = ClientAuth {
            ca_file,
            allowed: vec![],
        };
        assert!(matches!(
            Callers::load(&auth, ring()),
            Err(CallerError::NoAllowedNames)
        ));
    }
}
