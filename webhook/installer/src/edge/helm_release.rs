//! Helm's release records (Secrets `sh.helm.release.v1.<release>.v<revision>`, labelled
//! `owner=helm`; the edge's cache holds their labels, which name a revision left pending by
//! a killed Helm): one is rewritten to mark it failed — what Helm does itself when it is
//! interrupted gracefully.
//!
//! A record's `release` entry is base64 of the gzipped JSON release; its `status` label
//! mirrors `info.status`. Both change together in one guarded write.

use std::{
    io::{Read, Write},
    sync::Arc,
};

use base64::{Engine, engine::general_purpose::STANDARD};
use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use k8s_openapi::{ByteString, api::core::v1::Secret, jiff::Timestamp};
use kube::{Api, Client, api::PostParams};
use providers_shared::installer::{
    drift::{ReleaseContent, contents},
    release_objects::{ReleaseObject, documents_of_manifest, objects_of_manifest},
};

use crate::{
    support::error::Error,
    support::stop::{self, Stop},
};
use providers_edge_watch::grants as edge_grants;

/// The most a release record's content may inflate to when it is read: a chart's
/// manifests and values, far below what a gzip bomb planted on the edge would make.
const MAX_RELEASE_BYTES: u64 = 16 * 1024 * 1024;

/// The most of a release's `config` (the values given to helm) that is parsed to compare
/// with the plan's: far above any plan's values. Parsed JSON takes many times its text
/// (a list of zeros, sixteen), so nothing larger is ever built into a tree.
const MAX_CONFIG_BYTES: usize = 256 * 1024;

/// One release read at a time: each may hold up to [`MAX_RELEASE_BYTES`] while decoded.
static READING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// What the record `secret` installs (chart, version, values), read once when drift is
/// found; `None` when it is gone or cannot be decoded (the drift is then reported without
/// it).
pub async fn content(
    edge: &str,
    client: &Client,
    namespace: &str,
    secret: &str,
) -> Result<Option<ReleaseContent>, Stop> {
    read_record(edge, client, namespace, secret, |encoded| {
        release_content(&encoded)
    })
    .await
}

/// The objects Helm recorded for the revision in the record `secret` (its manifest's
/// objects in the release namespace), read once per record to follow them for drift,
/// with the manifest itself when a content check may parse it (for the pass that read
/// it, so a check right after the attempt does not read the record again); `None` when
/// it is gone or cannot be decoded.
pub async fn objects(
    edge: &str,
    client: &Client,
    namespace: &str,
    secret: &str,
) -> Result<Option<RecordObjects>, Stop> {
    let release_namespace = namespace.to_owned();
    read_record(edge, client, namespace, secret, move |encoded| {
        manifest_objects(&encoded, &release_namespace)
    })
    .await
}

/// What a record's manifest holds: the objects, and the manifest when a content check may
/// parse it.
pub struct RecordObjects {
    pub objects: Vec<ReleaseObject>,
    pub manifest: Option<Arc<str>>,
    /// The SHA-256 of the manifest, to pin it.
    pub manifest_digest: String,
}

/// The documents a content check compares, and the digest of the manifest they are from.
pub struct CheckedManifest {
    pub documents: Vec<CheckedDocument>,
    pub manifest_digest: String,
}

/// The most of a release's manifest a content check parses: far above a chart's rendered
/// objects, and what one check may hold in memory whoever rewrote the record.
const MAX_CHECKED_MANIFEST_BYTES: usize = 4 * 1024 * 1024;

/// The manifest documents of the record `secret` that name `wanted` (sorted), each parsed
/// for a content check (or why it cannot be); `None` when the record is gone or cannot be
/// decoded.
pub async fn documents(
    edge: &str,
    client: &Client,
    namespace: &str,
    secret: &str,
    wanted: Arc<Vec<ReleaseObject>>,
) -> Result<Option<CheckedManifest>, Stop> {
    let release_namespace = namespace.to_owned();
    read_record(edge, client, namespace, secret, move |encoded| {
        with_manifest(&encoded, |manifest| {
            parsed_documents(manifest, &release_namespace, &wanted)
        })
    })
    .await
}

/// One manifest document a content check compares: its object, and its body (or why it
/// cannot be read).
pub type CheckedDocument = (ReleaseObject, Result<serde_json::Value, String>);

/// [`documents`] from a manifest read already, off the async workers.
pub async fn documents_of(
    manifest: Arc<str>,
    namespace: &str,
    wanted: Arc<Vec<ReleaseObject>>,
) -> Option<CheckedManifest> {
    let release_namespace = namespace.to_owned();
    tokio::task::spawn_blocking(move || parsed_documents(&manifest, &release_namespace, &wanted))
        .await
        .ok()
        .and_then(Result::ok)
}

/// The documents of `manifest` that name `wanted`, parsed; a manifest past
/// [`MAX_CHECKED_MANIFEST_BYTES`] is not.
fn parsed_documents(
    manifest: &str,
    namespace: &str,
    wanted: &[ReleaseObject],
) -> Result<CheckedManifest, String> {
    if manifest.len() > MAX_CHECKED_MANIFEST_BYTES {
        return Err(format!(
            "the release's manifest is {} bytes, above the {MAX_CHECKED_MANIFEST_BYTES} a content check parses",
            manifest.len()
        ));
    }
    Ok(CheckedManifest {
        documents: documents_of_manifest(manifest, namespace, wanted)
            .into_iter()
            .map(|(object, text)| (object, contents::expected_body(text)))
            .collect(),
        manifest_digest: contents::manifest_digest(manifest),
    })
}

/// The manifest of a record's release.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct ReleaseManifest<'a> {
    #[serde(borrow)]
    manifest: std::borrow::Cow<'a, str>,
}

/// Reads the record `secret` (through the installer's grant in its namespace) and decodes
/// its `release` entry with `decode`, off the async workers and one record at a time;
/// `None` when it is gone or cannot be decoded.
async fn read_record<T: Send + 'static>(
    edge: &str,
    client: &Client,
    namespace: &str,
    secret: &str,
    decode: impl FnOnce(Vec<u8>) -> Result<T, String> + Send + 'static,
) -> Result<Option<T>, Stop> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let get = || api.get_opt(secret);
    let Some(record) =
        edge_grants::with_grant(client, namespace, edge_grants::NAMESPACE_RIGHTS, get)
            .await
            .map_err(|e| stop::edge_failure(edge, e))?
    else {
        return Ok(None);
    };
    let encoded = record
        .data
        .and_then(|mut d| d.remove("release"))
        .map(|b| b.0)
        .unwrap_or_default();
    let _one = READING.acquire().await.ok();
    let decoded = tokio::task::spawn_blocking(move || decode(encoded))
        .await
        .unwrap_or_else(|e| Err(format!("the decoder stopped: {e}")));
    match decoded {
        Ok(decoded) => Ok(Some(decoded)),
        Err(why) => {
            tracing::info!(%edge, %namespace, %secret, %why, "cannot read a release record");
            Ok(None)
        }
    }
}

/// The objects of a record's `release` entry's manifest in `namespace`.
fn manifest_objects(encoded: &[u8], namespace: &str) -> Result<RecordObjects, String> {
    with_manifest(encoded, |manifest| {
        Ok(RecordObjects {
            objects: objects_of_manifest(manifest, namespace),
            manifest: (manifest.len() <= MAX_CHECKED_MANIFEST_BYTES).then(|| Arc::from(manifest)),
            manifest_digest: contents::manifest_digest(manifest),
        })
    })
}

/// `read` of the manifest of a record's `release` entry.
fn with_manifest<T>(
    encoded: &[u8],
    read: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, String> {
    let json = inflate(encoded)?;
    let release: ReleaseManifest<'_> =
        serde_json::from_slice(&json).map_err(|e| format!("the release is not JSON: {e}"))?;
    read(&release.manifest)
}

/// The chart, version and values of a record's `release` entry, without building the
/// rest (manifests, chart files) into memory.
pub fn release_content(encoded: &[u8]) -> Result<ReleaseContent, String> {
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct ReleaseSummary<'a> {
        chart: Chart,
        #[serde(borrow)]
        config: Option<&'a serde_json::value::RawValue>,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Chart {
        metadata: Metadata,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Metadata {
        name: String,
        version: String,
    }
    let json = inflate(encoded)?;
    let release: ReleaseSummary<'_> =
        serde_json::from_slice(&json).map_err(|e| format!("the release is not JSON: {e}"))?;
    let values = match release.config {
        None => serde_json::Value::Object(Default::default()),
        Some(raw) if raw.get().len() <= MAX_CONFIG_BYTES => serde_json::from_str(raw.get())
            .map_err(|e| format!("the release's values are not JSON: {e}"))?,
        Some(raw) => serde_json::Value::String(format!(
            "<{} bytes of values, more than any plan holds>",
            raw.get().len()
        )),
    };
    Ok(ReleaseContent {
        chart: release.chart.metadata.name,
        version: release.chart.metadata.version,
        values,
    })
}

/// A record's `release` entry, base64 of gzipped JSON (or of plain JSON), as bytes of
/// JSON, bounded.
fn inflate(encoded: &[u8]) -> Result<Vec<u8>, String> {
    let compressed = STANDARD
        .decode(encoded)
        .map_err(|e| format!("the release entry is not base64: {e}"))?;
    let mut json = Vec::new();
    if compressed.starts_with(&[0x1f, 0x8b, 0x08]) {
        GzDecoder::new(compressed.as_slice())
            .take(MAX_RELEASE_BYTES + 1)
            .read_to_end(&mut json)
            .map_err(|e| format!("the release entry is not gzip: {e}"))?;
    } else {
        json = compressed;
    }
    if json.len() as u64 > MAX_RELEASE_BYTES {
        return Err(format!("the release is over {MAX_RELEASE_BYTES} bytes"));
    }
    Ok(json)
}

/// A record's `release` entry as a JSON tree (for rewriting one the installer owns).
pub fn release_tree(encoded: &[u8]) -> Result<serde_json::Value, String> {
    serde_json::from_slice(&inflate(encoded)?).map_err(|e| format!("the release is not JSON: {e}"))
}

/// Marks the record `secret` failed, if it is still the observed object and pending.
pub async fn mark_failed(
    edge: &str,
    client: &Client,
    namespace: &str,
    secret: &str,
    uid: &str,
    description: &str,
) -> Result<(), Stop> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let get = || api.get_opt(secret);
    let Some(mut record) =
        edge_grants::with_grant(client, namespace, edge_grants::NAMESPACE_RIGHTS, get)
            .await
            .map_err(|e| stop::edge_failure(edge, e))?
    else {
        return Ok(());
    };
    if record.metadata.uid.as_deref() != Some(uid) {
        return Err(Stop::Interrupted {
            action: "mark-release-failed",
            message: format!("release record {secret} was replaced"),
        });
    }
    let labels = record.metadata.labels.get_or_insert_default();
    if !labels
        .get("status")
        .is_some_and(|s| s.starts_with("pending-"))
    {
        return Ok(());
    }
    labels.insert("status".into(), "failed".into());
    labels.insert(
        "modifiedAt".into(),
        Timestamp::now().as_second().to_string(),
    );
    let data = record.data.get_or_insert_default();
    let encoded = data.get("release").map(|b| b.0.clone()).unwrap_or_default();
    let rewritten =
        rewrite_failed(&encoded, description).map_err(|message| Error::ReleaseRecord {
            secret: secret.to_owned(),
            message,
        })?;
    data.insert("release".into(), ByteString(rewritten));
    // The resourceVersion read above makes this write fail if the record changed since.
    match api.replace(secret, &PostParams::default(), &record).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_conflict() => Err(Stop::Interrupted {
            action: "mark-release-failed",
            message: format!("release record {secret} changed: {}", status.message),
        }),
        Err(failed) => Err(stop::edge_failure(edge, failed)),
    }
}

/// The `release` entry of a record with `info.status` set to `failed`.
pub fn rewrite_failed(encoded: &[u8], description: &str) -> Result<Vec<u8>, String> {
    let mut release = release_tree(encoded)?;
    let info = release
        .get_mut("info")
        .and_then(|i| i.as_object_mut())
        .ok_or("the release has no info")?;
    info.insert("status".into(), "failed".into());
    info.insert("description".into(), description.into());
    let json = serde_json::to_vec(&release).map_err(|e| e.to_string())?;
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(&json).map_err(|e| e.to_string())?;
    let compressed = encoder.finish().map_err(|e| e.to_string())?;
    Ok(STANDARD.encode(compressed).into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(json: &serde_json::Value) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(json.to_string().as_bytes()).unwrap();
        STANDARD.encode(encoder.finish().unwrap()).into_bytes()
    }

    fn decode(bytes: &[u8]) -> serde_json::Value {
        let gz = STANDARD.decode(bytes).unwrap();
        let mut text = String::new();
        GzDecoder::new(gz.as_slice())
            .read_to_string(&mut text)
            .unwrap();
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn pending_record_becomes_failed_and_keeps_the_rest() {
        let release = serde_json::json!({
            "name": "hello", "version": 1, "namespace": "ns",
            "info": {"status": "pending-install", "description": "Initial install underway"},
            "manifest": "kind: ConfigMap",
        });
        let rewritten = rewrite_failed(&encode(&release), "interrupted").unwrap();
        let back = decode(&rewritten);
        assert_eq!(back["info"]["status"], "failed");
        assert_eq!(back["info"]["description"], "interrupted");
        assert_eq!(back["manifest"], "kind: ConfigMap");
    }

    #[test]
    fn a_bomb_is_refused_at_the_bound() {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
        encoder
            .write_all(&vec![b' '; (MAX_RELEASE_BYTES + 10) as usize])
            .unwrap();
        let bomb = STANDARD.encode(encoder.finish().unwrap()).into_bytes();
        assert!(super::release_tree(&bomb).unwrap_err().contains("over"));
    }

    #[test]
    fn the_content_names_chart_version_and_values() {
        let release = serde_json::json!({
            "chart": {"metadata": {"name": "hello", "version": "0.2.0"}},
            "config": {"replicas": 3},
        });
        let content = super::release_content(&encode(&release)).unwrap();
        assert_eq!(content.chart, "hello");
        assert_eq!(content.version, "0.2.0");
        assert_eq!(content.values, serde_json::json!({"replicas": 3}));
    }

    #[test]
    fn values_too_large_to_compare_are_not_built() {
        let zeros = format!("[{}0]", "0,".repeat(200_000));
        let release = format!(
            r#"{{"chart":{{"metadata":{{"name":"hello","version":"1"}}}},"config":{{"a":{zeros}}}}}"#
        );
        let content =
            super::release_content(&encode(&serde_json::from_str(&release).unwrap())).unwrap();
        assert!(
            content
                .values
                .as_str()
                .unwrap()
                .contains("more than any plan holds")
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(rewrite_failed(b"%%%", "x").is_err());
        assert!(rewrite_failed(&STANDARD.encode(b"not json").into_bytes(), "x").is_err());
    }
}
