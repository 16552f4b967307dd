use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::recipe::{ChartRef, RuntimeCredential};
use crate::execution::ExecutionRule;

/// The Workspace an attempt was sealed for. A plan copied to another Workspace, or to a
/// same-name replacement, no longer matches.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceIdentity {
    /// The Workspace's namespace (the organization).
    pub namespace: String,
    /// The Workspace's name.
    pub name: String,
    /// The Workspace's UID. Empty for an attempt sealed at creation, when the apiserver
    /// has not yet assigned one; the installer then binds the attempt to the UID it finds
    /// and no later attempt can be sealed without it.
    #[serde(default)]
    pub uid: String,
}

/// Who started an attempt, as the apiserver authenticated them. The installer asks RBAC
/// again, as exactly this user, before it uses its edge credential for the attempt.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    /// The user's name.
    pub username: String,
    /// The user's UID, when the authenticator provides one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The user's groups, as authenticated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Extra attributes the authenticator provided (scopes, for example).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

/// The plan of one install attempt: everything the installer executes, fixed when the
/// attempt starts. Written only by the admission webhook; users never write it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The attempt number, 1 for the first; a retry or an upgrade seals attempt + 1.
    pub attempt: i64,
    /// A unique identifier of this attempt.
    #[serde(rename = "attemptID")]
    #[schemars(length(max = 64))]
    pub attempt_id: String,
    /// The value of spec.retry this attempt answers.
    #[serde(default)]
    pub retry: i64,
    /// The Workspace this plan is sealed for.
    pub workspace: WorkspaceIdentity,
    /// The organization: the Workspace's namespace.
    pub org: String,
    /// The provider: the Recipe's name.
    pub provider: String,
    /// The user whose request started the attempt.
    pub owner: Owner,
    /// The chart to install.
    pub chart: ChartRef,
    /// The pinned chart version.
    pub version: String,
    /// The Helm release name.
    pub release: String,
    /// The namespace on the edge that the release is installed into.
    pub namespace: String,
    /// The digest of the complete chart values (the Recipe's defaults with the tenant's
    /// values merged): `sha256:` and the hex SHA-256 of their canonical JSON. The values
    /// themselves are in the PlanValues object named by the Workspace and this digest.
    #[serde(
        default,
        rename = "valuesDigest",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(regex(pattern = r"^sha256:[0-9a-f]{64}$"))]
    pub values_digest: Option<String>,
    /// The complete chart values, inline: only in plans sealed before values were stored
    /// apart by digest, which still verify and run.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::api::json_number::optional_value"
    )]
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub values: Option<Value>,
    /// The target Edge's name.
    pub edge_name: String,
    /// The target edge's cluster ID.
    pub cluster: String,
    /// The UUID of the edge workspace that owns the target cluster.
    #[serde(rename = "edgeWorkspaceUUID")]
    pub edge_workspace_uuid: String,
    /// The name of the Job that runs this attempt on the edge.
    pub job: String,
    /// The rights the attempt's runner gets in the release namespace.
    #[serde(default)]
    #[schemars(length(max = 16))]
    pub execution: Vec<ExecutionRule>,
    /// The provider's hub credential, as the Recipe declared it when sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_credential: Option<RuntimeCredential>,
    /// What is not drift of the release, as the Recipe said when sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<super::DriftPolicy>,
    /// When the webhook sealed the plan. A plan sealed at creation, before the Workspace
    /// has a UID, is valid only for a Workspace created right after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_at: Option<Time>,
    /// Whether the plan was sealed for a dry run. Such a plan is shown, never run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Why the attempt was sealed. Absent in plans sealed before causes were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// For a rollback: the earlier attempt whose plan this one runs again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restores: Option<i64>,
}

/// Why an attempt was sealed: what `kubectl provider history` shows beside each attempt.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Cause {
    /// The Workspace was created (or stored without a plan).
    Create,
    /// The tenant changed the intent (recipe, edge, version or values).
    Upgrade,
    /// spec.retry was raised after a failed attempt: the same plan again.
    Retry,
    /// spec.retry was raised while the installed release had drifted: the same plan again.
    Repair,
    /// The installer asked for a repair when it found drift, as the Recipe's drift policy
    /// says (`repair: Automatic`): the same plan again, for its owner.
    AutomaticRepair,
    /// An earlier succeeded attempt's plan, sealed again (`kubectl provider rollback`).
    Rollback,
}

/// The signature over a plan.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Seal {
    /// The signing key's ID: the first 16 hex digits of the SHA-256 of its public key.
    #[serde(rename = "keyID")]
    #[schemars(length(max = 64))]
    pub key_id: String,
    /// The algorithm; always `Ed25519`.
    #[schemars(length(max = 16))]
    pub algorithm: String,
    /// The base64 Ed25519 signature over the plan's canonical JSON.
    #[schemars(length(max = 128))]
    pub signature: String,
}

/// A plan with its seal: `spec.plan` of a Workspace. Decoded in one pass, without
/// `flatten`'s buffering (`sealed_plan_decoding`).
#[derive(Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SealedPlan {
    #[serde(flatten)]
    pub plan: Plan,
    /// The webhook's signature over every other field of the plan.
    pub seal: Seal,
}
