//! What a Workspace's status says of the release an installed attempt left on its edge,
//! and of drift from it (ADR 26, ADR 37, ADR 38): the status records of `workspace`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};

/// The Helm release an installed attempt left on its edge: what drift is measured against.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstalledRelease {
    /// The release's name.
    pub name: String,
    /// Helm's revision number.
    pub revision: i64,
    /// The UID of Helm's storage Secret of that revision: a release uninstalled and
    /// installed again outside the installer has another.
    #[serde(rename = "recordUID")]
    pub record_uid: String,
    /// What the first content check after the attempt found helm itself stored otherwise
    /// than its manifest reads (a value its YAML reading changed): the fields, with the
    /// value found, that later checks do not count as drift while they keep it. Absent
    /// until that check. ADR 47.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub content_baseline: Option<Vec<ContentBaseline>>,
}

/// A field of a release's object that helm stored otherwise than its manifest reads.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContentBaseline {
    /// `Kind namespace/name`.
    pub object: String,
    /// The field's path.
    pub field: String,
    /// SHA-256 of the value helm stored. A Secret's value is never read, so a Secret's
    /// fields are never in a baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// How the release on the edge differs from what the installed attempt left.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// `ReleaseMissing`, `ReleaseChanged` or `ReleaseReplaced`.
    pub reason: String,
    /// What changed and what to do, in a sentence.
    pub message: String,
    /// The newest revision found, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// The UID of its storage Secret: the content is read once per revision found.
    #[serde(default, rename = "recordUID", skip_serializing_if = "Option::is_none")]
    pub record_uid: Option<String>,
    /// When the installer found it.
    pub detected_at: Time,
    /// For `ObjectChanged` and `ObjectDeleted`: the objects of the release changed or
    /// deleted on the edge by someone else than the release, at most eight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub objects: Vec<DriftedObject>,
    /// What the installer did about it on its own, when the plan's drift policy says
    /// `repair: Automatic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_repair: Option<AutomaticRepair>,
}

/// The installer's own answer to a drift, under `repair: Automatic`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomaticRepair {
    /// `Requested`: it raised spec.retry for a repair of the installed plan. `Stopped`: the
    /// drift came back within the quiet period after an automatic repair, so a person
    /// repairs it (`kubectl provider repair`).
    pub state: AutomaticRepairState,
    /// When.
    pub at: Time,
}

/// See [`AutomaticRepair::state`].
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum AutomaticRepairState {
    Requested,
    Stopped,
}

/// An object of an installed release that someone else than the release changed or
/// deleted on the edge, as its field managers tell or its contents compared with the
/// release's manifest show.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftedObject {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// `Changed` or `Deleted`.
    pub change: String,
    /// The field manager that wrote it (`kubectl-edit`, `kubectl-patch`, a controller's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    /// When that manager last wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<Time>,
    /// The fields it owns, as paths (`data.greeting`), at most eight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub fields: Vec<String>,
    /// `Contents` when the installer's comparison of the object with the release's
    /// manifest found the change (its field managers did not show it, so no manager is
    /// named); absent when its field managers did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_by: Option<String>,
}

/// A kind of the installed release's objects that drift cannot be read for on the edge,
/// and why: an edit of those objects is not seen.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnfollowedKind {
    pub api_version: String,
    pub kind: String,
    /// How many of the release's objects are of that kind.
    pub objects: i64,
    /// `ListRefused` (the edge's RBAC does not let the installer list the kind),
    /// `NotServed` (the edge serves no namespaced kind of that name) or
    /// `NotRunnerWritable` (the plan's execution rules do not let the runner write it).
    pub reason: String,
    /// What it means and what to do, in a sentence.
    pub message: String,
}
