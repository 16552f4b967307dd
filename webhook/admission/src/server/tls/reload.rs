//! Re-reading the serving certificate: on a change in the files' directories (a kubelet
//! Secret volume swaps a `..data` symlink) and on a poll, since watches can be missed.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use notify::{
    EventKind, RecommendedWatcher, RecursiveMode, Watcher,
    event::{AccessKind, AccessMode},
};
use rustls::crypto::CryptoProvider;
use tokio::{sync::Notify, task::JoinHandle};

use super::serving_cert::{
    Reload, ServingCert, TlsError, TlsFiles, content_digest, fingerprint, parse_pair, read_files,
    read_pair,
};
use crate::server::callers::Callers;

/// Reads the files and, when their content changed and forms a valid pair, swaps the pair.
#[derive(Debug)]
pub struct CertReloader {
    files: TlsFiles,
    provider: Arc<CryptoProvider>,
    pub(super) serving: Arc<ServingCert>,
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
pub(super) fn is_content_change(kind: &EventKind) -> bool {
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
