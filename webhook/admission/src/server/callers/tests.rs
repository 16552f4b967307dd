//! Who may call: client certificates checked against the CA and the allowed names.

use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
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
