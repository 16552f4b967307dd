//! The serving certificate pair: where its files are, how they are read and checked, and
//! the resolver that hands every new handshake the pair in use.

use std::{
    fmt,
    path::PathBuf,
    sync::{Arc, RwLock},
};

use providers_runtime::locks::ReadWriteLocked;
use rustls::{
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
};
use sha2::{Digest, Sha256};

/// Paths of the serving certificate chain and its private key, both PEM.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// Certificate chain, leaf first.
    pub cert: PathBuf,
    /// Private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Why a certificate/key pair could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} holds no usable PEM CERTIFICATE block: {source}")]
    Certificate {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{path} holds no usable PEM PRIVATE KEY block: {source}")]
    Key {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error(
        "the key in {key} cannot serve the certificate in {cert} ({source}); \
         provide a matching certificate and key"
    )]
    Pair {
        cert: PathBuf,
        key: PathBuf,
        source: rustls::Error,
    },
}

/// What a reload check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reload {
    /// The files hold the pair in use, or the pair last rejected: nothing to do.
    Unchanged,
    /// A new, valid pair is now served to new connections.
    Applied,
}

/// The rustls certificate resolver: hands every new handshake the current pair.
pub struct ServingCert {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ServingCert {
    pub(super) fn new(key: CertifiedKey) -> Self {
        Self {
            current: RwLock::new(Arc::new(key)),
        }
    }

    pub(super) fn get(&self) -> Arc<CertifiedKey> {
        self.current.read_locked().clone()
    }

    pub(super) fn set(&self, key: CertifiedKey) {
        *self.current.write_locked() = Arc::new(key);
    }
}

impl fmt::Debug for ServingCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServingCert")
            .field("fingerprint", &fingerprint(&self.get()))
            .finish()
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.get())
    }
}

pub(super) async fn read_pair(
    files: &TlsFiles,
    provider: &CryptoProvider,
) -> Result<([u8; 32], CertifiedKey), TlsError> {
    let (cert_pem, key_pem) = read_files(files).await?;
    let key = parse_pair(files, &cert_pem, &key_pem, provider)?;
    Ok((content_digest(&cert_pem, &key_pem), key))
}

pub(super) async fn read_files(files: &TlsFiles) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
    let read = |path: PathBuf| async move {
        tokio::fs::read(&path)
            .await
            .map_err(|source| TlsError::Read { path, source })
    };
    Ok((
        read(files.cert.clone()).await?,
        read(files.key.clone()).await?,
    ))
}

pub(super) fn parse_pair(
    files: &TlsFiles,
    cert_pem: &[u8],
    key_pem: &[u8],
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .and_then(|chain| {
            if chain.is_empty() {
                Err(rustls::pki_types::pem::Error::NoItemsFound)
            } else {
                Ok(chain)
            }
        })
        .map_err(|source| TlsError::Certificate {
            path: files.cert.clone(),
            source,
        })?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|source| TlsError::Key {
        path: files.key.clone(),
        source,
    })?;
    let pair = |source| TlsError::Pair {
        cert: files.cert.clone(),
        key: files.key.clone(),
        source,
    };
    let certified = CertifiedKey::from_der(chain, key, provider).map_err(pair)?;
    // `from_der` accepts a pair whose consistency it cannot determine; a serving pair must be
    // known to match, or every handshake would fail after the swap.
    certified.keys_match().map_err(pair)?;
    Ok(certified)
}

/// Identifies the files' content; lengths are included so no two pairs hash alike by shifting
/// bytes between the files.
pub(super) fn content_digest(cert_pem: &[u8], key_pem: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in [cert_pem, key_pem] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// SHA-256 of the leaf certificate, as operators see it in `openssl x509 -fingerprint -sha256`.
pub(super) fn fingerprint(key: &CertifiedKey) -> String {
    let Some(leaf) = key.cert.first() else {
        return String::from("none");
    };
    Sha256::digest(leaf.as_ref())
        .iter()
        .map(|byte| format!("{byte:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}
