//! What the installer reads of a Helm release on the edge: its newest revision from the
//! labels of Helm's storage Secrets, and what one revision's record says it ran.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::Value;

/// The newest revision of a Helm release, read from the labels of Helm's storage Secret
/// (`sh.helm.release.v1.<release>.v<revision>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseRevision {
    /// The storage Secret's name.
    pub secret: String,
    /// Its UID, the guard of any write to it.
    pub uid: String,
    /// The revision number.
    pub revision: i64,
    /// Helm's status: `deployed`, `failed`, `pending-install`, `pending-upgrade`, ...
    pub status: String,
    /// When the record was made.
    pub created: Option<Time>,
    /// When Helm last changed it (its `modifiedAt` label, in seconds), if it says.
    pub modified: Option<i64>,
}

impl ReleaseRevision {
    /// Whether a Helm operation holds the release: Helm refuses another one with
    /// "another operation (install/upgrade/rollback) is in progress".
    pub fn is_pending(&self) -> bool {
        self.status.starts_with("pending-")
    }

    /// Whether a Helm operation is under way on it: pending, or being uninstalled.
    pub fn is_transient(&self) -> bool {
        self.is_pending() || self.status == "uninstalling"
    }
}

/// The metadata of Helm's storage Secrets of one release → its newest revision.
pub fn newest_revision(records: &[ObjectMeta]) -> Option<ReleaseRevision> {
    records
        .iter()
        .filter_map(|meta| {
            let labels = meta.labels.as_ref()?;
            Some(ReleaseRevision {
                secret: meta.name.clone()?,
                uid: meta.uid.clone().unwrap_or_default(),
                revision: labels.get("version")?.parse().ok()?,
                status: labels.get("status").cloned().unwrap_or_default(),
                created: meta.creation_timestamp.clone(),
                modified: labels.get("modifiedAt").and_then(|m| m.parse().ok()),
            })
        })
        .max_by_key(|r| r.revision)
}

/// What Helm recorded of one revision, read from the content of its storage record
/// (`chart.metadata.name`, `chart.metadata.version` and `config`, the values helm was given).
#[derive(Clone, Debug, PartialEq)]
pub struct ReleaseContent {
    pub chart: String,
    pub version: String,
    /// The values supplied to helm (the release's `config`).
    pub values: Value,
}
