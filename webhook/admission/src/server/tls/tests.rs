//! Loading and reloading the serving certificate.

use super::reload::is_content_change;
use super::serving_cert::{Reload, TlsError};
use super::*;
use crate::server::testing::{TestPki, ring};
use std::path::Path;

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
    use notify::{
        EventKind,
        event::{AccessKind, AccessMode, CreateKind, ModifyKind, RemoveKind, RenameMode},
    };
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
