use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    plan::{Cause, SealedPlan},
    workspace_drift::{Drift, InstalledRelease},
};

/// The largest `spec.retry`: 2^53 - 1, the largest integer every JSON reader (JavaScript,
/// jq, a YAML tool's float) keeps exact, so a raised counter is never read back as
/// another number, and one more never overflows.
pub const MAX_RETRY: i64 = (1 << 53) - 1;

/// A tenant's provider workspace: which recipe to install on which edge, with which
/// values. Namespaced; the namespace is the organization.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "providers.platform.dev",
    version = "v1alpha1",
    kind = "Workspace",
    plural = "workspaces",
    shortname = "pws",
    category = "sealed-providers",
    derive = "PartialEq",
    namespaced,
    status = "WorkspaceStatus",
    doc = "A tenant's provider workspace: a sealed, durable Helm install of a platform recipe onto an edge.",
    printcolumn(name = "Recipe", type_ = "string", json_path = ".spec.recipe"),
    printcolumn(name = "Edge", type_ = "string", json_path = ".spec.edge"),
    printcolumn(name = "Version", type_ = "string", json_path = ".spec.plan.version"),
    printcolumn(name = "Attempt", type_ = "integer", json_path = ".spec.plan.attempt"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].status"#
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(
        name = "Message",
        type_ = "string",
        priority = 1,
        json_path = r#".status.conditions[?(@.type=="Ready")].message"#
    ),
    validation = pinned_rule("recipe", "self.spec.recipe == oldSelf.spec.recipe"),
    validation = pinned_rule("edge", "self.spec.edge == oldSelf.spec.edge"),
    validation = pinned_rule(
        "version",
        "(has(self.spec.version) ? self.spec.version : '') == (has(oldSelf.spec.version) ? oldSelf.spec.version : '')"
    ),
    validation = pinned_rule(
        "values",
        "has(self.spec.values) == has(oldSelf.spec.values) && (!has(self.spec.values) || self.spec.values == oldSelf.spec.values)"
    ),
    validation = kube::core::Rule::new(
        "(has(self.spec.retry) ? self.spec.retry : 0) >= (has(oldSelf.spec.retry) ? oldSelf.spec.retry : 0)"
    )
    .message("spec.retry may only increase: set it above its current value to ask for a retry")
    .field_path(".spec.retry")
    .reason(kube::core::Reason::FieldValueInvalid)
)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSpec {
    /// The Recipe to install (cluster-scoped, by name).
    #[schemars(length(min = 1, max = 253))]
    pub recipe: String,
    /// The Edge to install onto (cluster-scoped, by name). You need the `install` verb on
    /// this exact edge.
    #[schemars(length(min = 1, max = 253))]
    pub edge: String,
    /// The chart version; one the Recipe allows. Defaults to the Recipe's first version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub version: Option<String>,
    /// Chart values, at the paths the Recipe's valuesSchema allows only. At most 8 levels
    /// deep, 512 keys of at most 128 bytes, 32 KiB in all; no lists.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::api::json_number::optional_value"
    )]
    #[schemars(schema_with = "crate::schema::tenant_values")]
    pub values: Option<Value>,
    /// Raise this counter to ask for a new attempt after a failed one. The retry runs the
    /// original pinned plan: the same chart, version and values. At most 2^53 - 1, the
    /// largest integer every JSON reader keeps exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = MAX_RETRY))]
    pub retry: Option<i64>,
    /// The sealed plan of the current attempt. Written by the admission webhook only; a
    /// plan it did not produce is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<SealedPlan>,
}

/// The lifecycle phase of a Workspace.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum Phase {
    /// Sealed; the installer has not started the attempt yet (for example the edge is not Ready).
    Pending,
    /// The attempt's Job exists on the edge and has no result yet.
    Progressing,
    /// The last attempt's Job completed.
    Succeeded,
    /// The last attempt's Job failed, or the installer refused to start it.
    Failed,
    /// The Workspace is being deleted; no new attempt starts.
    Deleting,
}

/// The terminal result of an attempt.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum JobResult {
    /// The Job completed: `helm upgrade --install` exited 0.
    Succeeded,
    /// The Job failed.
    Failed,
    /// The installer refused to run the plan (for example an invalid seal, or a namespace
    /// owned by someone else); nothing ran.
    Rejected,
}

/// A preparation: the edge objects of one attempt, labelled with its ID, created before
/// its Job. One that expires without a Job is cleaned up and prepared afresh.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preparation {
    /// The preparation's ID; every edge object of the attempt carries it as a label.
    #[serde(rename = "preparationID")]
    pub preparation_id: String,
    /// When an unfinished preparation may be cleaned up by the next leader.
    pub preparation_expires_at: Time,
}

/// One finished or running attempt, newest last.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRecord {
    /// The attempt number.
    pub attempt: i64,
    /// The attempt's ID.
    #[serde(rename = "attemptID")]
    pub attempt_id: String,
    /// The chart version it ran.
    pub version: String,
    /// The user who started it.
    pub owner: String,
    /// The Job's name on the edge.
    pub job: String,
    /// The result, once terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JobResult>,
    /// When it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// Why it ended as it did, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Why it was sealed, as its plan says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// For a rollback: the attempt whose plan it ran again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restores: Option<i64>,
    /// The sealed plan and the intent it was resolved from, kept once the attempt
    /// succeeded so that `kubectl provider rollback` can seal it again. Only the newest
    /// few succeeded attempts keep theirs (the installer's --rollback-history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<KeptPlan>,
}

/// A succeeded attempt's plan, kept for a rollback.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeptPlan {
    /// spec.version as it was when the attempt was sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// spec.values as they were when the attempt was sealed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::api::json_number::optional_value"
    )]
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub values: Option<Value>,
    /// The attempt's sealed plan; its seal is verified again before it is sealed anew.
    /// (Schemaless here: the API server's rules on spec.plan need not run again on a copy
    /// only the installer writes and the webhook verifies.)
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub plan: SealedPlan,
}

/// The edge route an attempt runs on, resolved from its sealed plan when it starts. Kept
/// so the attempt can still be cleaned up after a newer plan targets somewhere else.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// The Edge's name.
    pub edge: String,
    /// The edge's cluster ID.
    pub cluster: String,
    /// The release namespace on the edge.
    pub namespace: String,
    /// The edge API endpoint the installer used, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// What the installer observed; written through the status subresource only.
///
/// The schema defaults the status to `observedGeneration: 0`: the API server applies it
/// when it reads a Workspace the installer has not written yet, so a new Workspace reads
/// as not yet observed (kstatus: InProgress) instead of as an object without status
/// (kstatus: Current) until the installer's first write.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": 0}))]
pub struct WorkspaceStatus {
    /// The lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The metadata.generation the installer last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready, Progressing and Failed, by the Kubernetes conventions; Reconciling and
    /// Stalled only while True; Drifted once an attempt is installed. One entry per type.
    #[serde(default)]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["type"]
    ))]
    pub conditions: Vec<Condition>,
    /// The attempt the rest of this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i64>,
    /// The attempt's ID.
    #[serde(default, rename = "attemptID", skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    /// Where the attempt this status describes runs: its edge, cluster and namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// The UID of the Workspace the installer bound the attempt to.
    #[serde(
        default,
        rename = "workspaceUID",
        skip_serializing_if = "Option::is_none"
    )]
    pub workspace_uid: Option<String>,
    /// The attempt's Job name on the edge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The attempt's Job UID on the edge.
    #[serde(default, rename = "jobUID", skip_serializing_if = "Option::is_none")]
    pub job_uid: Option<String>,
    /// The attempt's terminal result; absent while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_result: Option<JobResult>,
    /// When the attempt reached its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// The Job's resourceVersion on the edge when its end was seen: an edit of the
    /// release's objects written after it is drift, also within the second of `finishedAt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_resource_version: Option<String>,
    /// Whether the attempt's runner identity has been revoked and its Job released.
    #[serde(default)]
    pub cleaned_up: bool,
    /// Whether the installer knows if the release namespace was admitted.
    #[serde(default)]
    pub namespace_admission_known: bool,
    /// Whether the release namespace is ours (created by us, or labelled for this Workspace).
    #[serde(default)]
    pub namespace_admitted: bool,
    /// The release namespace's UID on the edge.
    #[serde(
        default,
        rename = "namespaceUID",
        skip_serializing_if = "Option::is_none"
    )]
    pub namespace_uid: Option<String>,
    /// The current attempt's preparation record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preparation: Option<Preparation>,
    /// The Workspace is being deleted: no new attempt may start.
    #[serde(default)]
    pub deleting: bool,
    /// The Secret on the edge that holds the provider's hub credential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_credential_secret: Option<String>,
    /// Every attempt, oldest first.
    #[serde(default)]
    pub attempts: Vec<AttemptRecord>,
    /// The release the installed attempt left on the edge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<InstalledRelease>,
    /// How the release on the edge has drifted from it, while it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
    /// The kinds of the installed release's objects whose drift is not seen, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub unfollowed: Vec<super::UnfollowedKind>,
}

impl WorkspaceStatus {
    /// The condition of type `type_`, if the status has one (there is at most one per type).
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// A CEL rule that keeps one intent field fixed while the sealed attempt has no result.
///
/// An attempt is active when a plan is sealed and the status records no terminal result
/// for that attempt, and no newer attempt is recorded. The webhook enforces the same rule; this copy lives in the apiserver
/// so the pin holds when the webhook configurations are removed or bypassed.
fn pinned_rule(field: &str, unchanged: &str) -> kube::core::Rule {
    let inactive = "!has(oldSelf.spec.plan) || (has(oldSelf.status) && has(oldSelf.status.attempt) \
         && (oldSelf.status.attempt > oldSelf.spec.plan.attempt || (has(oldSelf.status.jobResult) \
         && oldSelf.status.attempt == oldSelf.spec.plan.attempt)))";
    // The comparison goes first: CEL's `||` stops at the first true side, and on the
    // common write (every status write of the installer, where spec cannot change) the
    // field is unchanged, so the API server does not walk status and plan to find out
    // whether an attempt is active.
    kube::core::Rule::new(format!("({unchanged}) || {inactive}"))
        .message(kube::core::Message::Expression(format!(
            "'spec.{field} cannot change while attempt ' + oldSelf.spec.plan.attemptID + \
             ' is active: wait for its result (kubectl provider status), or delete the Workspace'"
        )))
        .field_path(format!(".spec.{field}"))
        .reason(kube::core::Reason::FieldValueForbidden)
}
