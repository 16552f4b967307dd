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

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::{Arc, PoisonError, RwLock},
    time::Duration,
};

use notify::{
    EventKind, RecommendedWatcher, RecursiveMode, Watcher,
    event::{AccessKind, AccessMode},
};
use rustls::{
    ServerConfig,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
};
use sha2::{Digest, Sha256};
use tokio::{sync::Notify, task::JoinHandle};

use super::callers::Callers;

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
    fn new(key: CertifiedKey) -> Self {
        Self {
            current: RwLock::new(Arc::new(key)),
        }
    }

    fn get(&self) -> Arc<CertifiedKey> {
        // Nothing panics while holding the lock, so a poisoned lock still holds a valid pair.
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, key: CertifiedKey) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(key);
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

/// Reads the files and, when their content changed and forms a valid pair, swaps the pair.
#[derive(Debug)]
pub struct CertReloader {
    files: TlsFiles,
    provider: Arc<CryptoProvider>,
    serving: Arc<ServingCert>,
    /// Hash of the files' content when the pair in use was loaded.
    applied: [u8; 32],
    /// Hash of the content last rejected, so a bad pair is reported once, not on every poll.
    rejected: Option<[u8; 32]>,
    /// The callers' CA, re-read with the pair.
    callers: Option<Arc<Callers>>,
}

/// How long to wait after a file event before reading: writers that replace the certificate and
/// the key one after the other produce several events, and reading between them sees a mismatch.
const SETTLE: Duration = Duration::from_millis(100);

/// The shortest poll interval accepted; a zero interval would spin.
const MIN_POLL: Duration = Duration::from_millis(50);

impl CertReloader {
    /// Loads the initial pair; an error here means the server cannot start.
    pub async fn load(files: TlsFiles, provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        let (digest, key) = read_pair(&files, &provider).await?;
        Ok(Self {
            files,
            provider,
            serving: Arc::new(ServingCert::new(key)),
            applied: digest,
            rejected: None,
            callers: None,
        })
    }

    /// Also keeps the callers' CA up to date.
    pub fn with_callers(mut self, callers: Option<Arc<Callers>>) -> Self {
        self.callers = callers;
        self
    }

    /// The resolver to put into the rustls configuration.
    pub fn serving_cert(&self) -> Arc<ServingCert> {
        self.serving.clone()
    }

    /// Re-reads the files; applies their pair if it is new and valid. On error the pair in use
    /// stays.
    pub async fn reload_if_changed(&mut self) -> Result<Reload, TlsError> {
        let (cert_pem, key_pem) = read_files(&self.files).await?;
        let digest = content_digest(&cert_pem, &key_pem);
        if digest == self.applied {
            self.rejected = None;
            return Ok(Reload::Unchanged);
        }
        if self.rejected == Some(digest) {
            return Ok(Reload::Unchanged);
        }
        match parse_pair(&self.files, &cert_pem, &key_pem, &self.provider) {
            Ok(key) => {
                self.serving.set(key);
                self.applied = digest;
                self.rejected = None;
                Ok(Reload::Applied)
            }
            Err(error) => {
                self.rejected = Some(digest);
                Err(error)
            }
        }
    }

    /// Keeps the serving certificate up to date until the returned guard is dropped.
    pub fn spawn(self, poll_interval: Duration) -> ReloadTask {
        ReloadTask(tokio::spawn(self.run(poll_interval.max(MIN_POLL))))
    }

    async fn run(mut self, poll_interval: Duration) {
        let changed = Arc::new(Notify::new());
        // Kept alive for as long as the loop runs; dropping it ends the watch.
        let extra: Vec<PathBuf> = self
            .callers
            .iter()
            .map(|c| c.ca_file().to_path_buf())
            .collect();
        let _watcher = watch_directories(&self.files, &extra, changed.clone());
        let mut poll = tokio::time::interval(poll_interval);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick completes at once; the initial pair was just loaded.
        poll.tick().await;
        loop {
            tokio::select! {
                () = changed.notified() => tokio::time::sleep(SETTLE).await,
                _ = poll.tick() => {}
            }
            match self.reload_if_changed().await {
                Ok(Reload::Applied) => tracing::info!(
                    cert = %self.files.cert.display(),
                    fingerprint = %fingerprint(&self.serving.get()),
                    "serving certificate reloaded; new connections use it",
                ),
                Ok(Reload::Unchanged) => {}
                Err(error) => tracing::warn!(
                    %error,
                    "new serving certificate rejected; still serving the previous one",
                ),
            }
            if let Some(callers) = &self.callers {
                match callers.reload_if_changed() {
                    Ok(true) => tracing::info!(
                        ca = %callers.ca_file().display(),
                        "webhook callers' CA reloaded; new connections use it"
                    ),
                    Ok(false) => {}
                    Err(error) => tracing::warn!(
                        %error,
                        "new callers' CA rejected; still using the previous one"
                    ),
                }
            }
        }
    }
}

/// The background reload task; aborted when dropped.
#[derive(Debug)]
pub struct ReloadTask(JoinHandle<()>);

impl Drop for ReloadTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Watches the directories holding the files. `None` (logged) when the platform refuses a watch:
/// polling still catches every change, only later.
fn watch_directories(
    files: &TlsFiles,
    extra: &[PathBuf],
    changed: Arc<Notify>,
) -> Option<RecommendedWatcher> {
    let handler = move |event: notify::Result<notify::Event>| match event {
        Ok(event) if is_content_change(&event.kind) => changed.notify_one(),
        Ok(_) => {}
        // An error may mean lost events (queue overflow): re-read to be sure.
        Err(_) => changed.notify_one(),
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(watcher) => watcher,
        Err(error) => {
            tracing::warn!(%error, "cannot watch the certificate files; relying on polling");
            return None;
        }
    };
    let mut dirs = vec![parent_dir(&files.cert), parent_dir(&files.key)];
    dirs.extend(extra.iter().map(|path| parent_dir(path)));
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        if let Err(error) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
            tracing::warn!(
                %error,
                dir = %dir.display(),
                "cannot watch the certificate directory; relying on polling",
            );
        }
    }
    Some(watcher)
}

/// Reads (opens, closes without writing) are not changes; our own reads would otherwise
/// trigger another read, forever.
fn is_content_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

async fn read_pair(
    files: &TlsFiles,
    provider: &CryptoProvider,
) -> Result<([u8; 32], CertifiedKey), TlsError> {
    let (cert_pem, key_pem) = read_files(files).await?;
    let key = parse_pair(files, &cert_pem, &key_pem, provider)?;
    Ok((content_digest(&cert_pem, &key_pem), key))
}

async fn read_files(files: &TlsFiles) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
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

fn parse_pair(
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
fn content_digest(cert_pem: &[u8], key_pem: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in [cert_pem, key_pem] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// SHA-256 of the leaf certificate, as operators see it in `openssl x509 -fingerprint -sha256`.
fn fingerprint(key: &CertifiedKey) -> String {
    let Some(leaf) = key.cert.first() else {
        return String::from("none");
    };
    Sha256::digest(leaf.as_ref())
        .iter()
        .map(|byte| format!("{byte:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::testing::{TestPki, ring};

    fn files_in(dir: &Path) -> TlsFiles {
        TlsFiles {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
        }
    }

    fn write(files: &TlsFiles, cert_pem: &str, key_pem: &str) {
        std::fs::write(&files.cert, cert_pem).unwrap();
        std::fs::write(&files.key, key_pem).unwrap();
    }

    fn served_leaf(reloader: &CertReloader) -> Vec<u8> {
        reloader.serving.get().cert[0].to_vec()
    }

    #[tokio::test]
    async fn unchanged_files_are_not_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        let leaf = TestPki::new().leaf();
        write(&files, &leaf.cert_pem, &leaf.key_pem);
        let mut reloader = CertReloader::load(files, ring()).await.unwrap();
        assert_eq!(
            reloader.reload_if_changed().await.unwrap(),
            Reload::Unchanged
        );
        assert_eq!(served_leaf(&reloader), leaf.cert_der);
    }

    #[tokio::test]
    async fn a_new_valid_pair_is_applied() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        let pki = TestPki::new();
        let (old, new) = (pki.leaf(), pki.leaf());
        write(&files, &old.cert_pem, &old.key_pem);
        let mut reloader = CertReloader::load(files.clone(), ring()).await.unwrap();
        write(&files, &new.cert_pem, &new.key_pem);
        assert_eq!(reloader.reload_if_changed().await.unwrap(), Reload::Applied);
        assert_eq!(served_leaf(&reloader), new.cert_der);
        assert_eq!(
            reloader.reload_if_changed().await.unwrap(),
            Reload::Unchanged
        );
    }

    #[tokio::test]
    async fn a_key_that_does_not_match_is_rejected_once_and_the_old_pair_stays() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        let pki = TestPki::new();
        let (old, other) = (pki.leaf(), pki.leaf());
        write(&files, &old.cert_pem, &old.key_pem);
        let mut reloader = CertReloader::load(files.clone(), ring()).await.unwrap();

        write(&files, &other.cert_pem, &old.key_pem);
        let error = reloader.reload_if_changed().await.unwrap_err();
        assert!(matches!(error, TlsError::Pair { .. }), "{error}");
        assert!(error.to_string().contains("tls.key"), "{error}");
        assert_eq!(served_leaf(&reloader), old.cert_der);
        // Reported once: the same bad content is not an error again on the next poll.
        assert_eq!(
            reloader.reload_if_changed().await.unwrap(),
            Reload::Unchanged
        );

        // Fixing the key applies the pair.
        write(&files, &other.cert_pem, &other.key_pem);
        assert_eq!(reloader.reload_if_changed().await.unwrap(), Reload::Applied);
        assert_eq!(served_leaf(&reloader), other.cert_der);
    }

    #[tokio::test]
    async fn garbage_is_rejected_and_the_old_pair_stays() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        let old = TestPki::new().leaf();
        write(&files, &old.cert_pem, &old.key_pem);
        let mut reloader = CertReloader::load(files.clone(), ring()).await.unwrap();

        write(&files, "not a certificate", &old.key_pem);
        let error = reloader.reload_if_changed().await.unwrap_err();
        assert!(matches!(error, TlsError::Certificate { .. }), "{error}");

        write(&files, &old.cert_pem, "not a key");
        let error = reloader.reload_if_changed().await.unwrap_err();
        assert!(matches!(error, TlsError::Key { .. }), "{error}");

        // A PEM block whose content is not a certificate.
        let bogus = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        write(&files, bogus, &old.key_pem);
        let error = reloader.reload_if_changed().await.unwrap_err();
        assert!(matches!(error, TlsError::Pair { .. }), "{error}");

        std::fs::remove_file(&files.key).unwrap();
        let error = reloader.reload_if_changed().await.unwrap_err();
        assert!(matches!(error, TlsError::Read { .. }), "{error}");

        assert_eq!(served_leaf(&reloader), old.cert_der);
        // Restoring the pair in use is not a change.
        write(&files, &old.cert_pem, &old.key_pem);
        assert_eq!(
            reloader.reload_if_changed().await.unwrap(),
            Reload::Unchanged
        );
    }

    #[tokio::test]
    async fn startup_fails_with_the_path_when_a_file_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        let error = CertReloader::load(files, ring()).await.unwrap_err();
        assert!(matches!(error, TlsError::Read { .. }), "{error}");
        assert!(error.to_string().contains("tls.crt"), "{error}");
    }

    #[test]
    fn reads_are_not_changes_but_writes_renames_and_removals_are() {
        use notify::event::{CreateKind, ModifyKind, RemoveKind, RenameMode};
        assert!(!is_content_change(&EventKind::Access(AccessKind::Open(
            AccessMode::Any
        ))));
        assert!(!is_content_change(&EventKind::Access(AccessKind::Close(
            AccessMode::Read
        ))));
        assert!(is_content_change(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(is_content_change(&EventKind::Create(CreateKind::Any)));
        assert!(is_content_change(&EventKind::Modify(ModifyKind::Name(
            RenameMode::To
        ))));
        assert!(is_content_change(&EventKind::Remove(RemoveKind::Any)));
    }
}
