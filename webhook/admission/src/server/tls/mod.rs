//! The serving certificate: loaded from PEM files, swapped atomically when the files change.
//!
//! rustls asks the resolver for a certificate on every handshake, so a swap affects only
//! connections made after it; established connections and their in-flight requests keep the
//! session they negotiated.
//!
//! Change detection watches the files' *directories* (a kubelet Secret volume replaces a
//! `..data` symlink, which a watch on the files themselves never sees) and also polls, because
//! watches can be missed (inotify queue overflow, a directory replaced wholesale, filesystems
//! without inotify). Both only trigger a re-read; a content hash decides whether anything changed.

use std::sync::Arc;

use rustls::{ServerConfig, crypto::CryptoProvider};

use super::callers::Callers;

mod reload;
mod serving_cert;

pub use reload::CertReloader;
pub use serving_cert::{ServingCert, TlsFiles};

/// A rustls server configuration that takes its certificate from `cert` on every handshake,
/// demands a client certificate that `callers` accepts (when given), and offers HTTP/2 and
/// HTTP/1.1 through ALPN.
pub fn server_config(
    cert: Arc<ServingCert>,
    callers: Option<Arc<Callers>>,
    provider: Arc<CryptoProvider>,
) -> Result<ServerConfig, rustls::Error> {
    let builder =
        ServerConfig::builder_with_provider(provider).with_safe_default_protocol_versions()?;
    let builder = match callers {
        Some(callers) => builder.with_client_cert_verifier(callers),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(cert);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests;
