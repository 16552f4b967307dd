//! Drift by contents (ADR 47): the objects a release's manifest sets, compared with what
//! is live on the edge for the fields the chart sets. It sees what field managers cannot
//! tell: an edit made while the attempt ran, a writer that rewrote `managedFields` or wrote
//! as `helm`, an opt-out annotation the chart never set.
//!
//! - Any kind but Secrets: the live object is read and compared here, field by field.
//! - Secrets: their data never comes to the hub. The edge's API server compares it: a
//!   dry-run JSON patch of `test` operations, one per key the chart sets, ends in a rename
//!   the API server always refuses, so the answer is always a refusal, never the Secret;
//!   which refusal says whether the tests held ([`secret_patch`], [`test_answer`],
//!   [`FailedTestSearch`]).

use serde_json::Value;

use crate::installer::release_objects::ANNOTATION_DRIFT;

/// Any kind but Secrets: compared here, field by field.
mod compare;
/// What a check found.
mod findings;
/// What helm's managed-fields entries claim beyond the manifest.
mod helm_owned;
/// When two scalars are the same value.
mod scalars;
/// When a release's content check is due.
mod schedule;
/// Secrets: compared by the edge's API server.
mod secret_tests;

pub use compare::{differing_fields, written_by_helm_alone};
pub use findings::{ContentFindings, ContentSeen, Difference, FOUND_BY_CONTENTS};
pub use schedule::{CheckDue, content_check_due};
pub use secret_tests::{
    FailedTestSearch, MAX_SECRET_TESTS, SENTINEL_NAME, SecretTest, TestAnswer, helm_alone_by_trace,
    secret_patch, secret_tests, test_answer,
};

/// The largest manifest document parsed for a content check: far above any object an API
/// server stores (etcd's default request limit is 1.5 MiB, and few are a tenth of it).
pub const MAX_DOCUMENT_BYTES: usize = 1536 * 1024;
/// One manifest document, as JSON. Its size is bounded, and the YAML parser bounds
/// nesting and alias expansion, so a rewritten record cannot make it costly.
pub fn expected_body(document: &str) -> Result<Value, String> {
    if document.len() > MAX_DOCUMENT_BYTES {
        return Err(format!(
            "its manifest document is {} bytes, above the {MAX_DOCUMENT_BYTES} a content check parses",
            document.len()
        ));
    }
    let mut body = serde_norway::from_str::<Value>(document)
        .map_err(|e| format!("its manifest document is not readable YAML: {e}"))?;
    merge_keys(&mut body, 0);
    Ok(body)
}

/// Applies YAML's merge keys (`<<: *defaults`), as Go's YAML reading does for helm: the
/// merged maps' keys that the map does not set itself. The parser bounds nesting, and
/// this walk stops where it does.
fn merge_keys(value: &mut Value, depth: usize) {
    if depth > 128 {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(merged) = map.remove("<<") {
                let sources = match merged {
                    Value::Array(items) => items,
                    one => vec![one],
                };
                for source in sources {
                    for (key, item) in source.as_object().into_iter().flatten() {
                        map.entry(key.clone()).or_insert_with(|| item.clone());
                    }
                }
            }
            for item in map.values_mut() {
                merge_keys(item, depth + 1);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| merge_keys(item, depth + 1)),
        _ => {}
    }
}

/// The SHA-256 of a release's manifest, in hex: pinned when the installer first reads the
/// revision's record, so that a record rewritten on the edge since (to match an edit) is
/// seen by the next content check.
pub fn manifest_digest(manifest: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(manifest.as_bytes()))
}

/// Whether the chart itself opts the object out of drift (its manifest's annotation; an
/// annotation added on the edge by anyone else does not count here).
pub fn opted_out(expected: &Value) -> bool {
    expected
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION_DRIFT))
        .and_then(Value::as_str)
        == Some("ignore")
}

#[cfg(test)]
mod tests;
