use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

/// The resolved chart values of one or more sealed plans of a Workspace, kept apart from
/// the Workspace so that it stays small whatever the Recipe's defaults weigh and however
/// many plans it keeps. Named by its Workspace and the values' digest; written once, by
/// the admission webhook, and never changed (the API server refuses a change of spec).
/// The plan's seal covers the digest: the installer and `kubectl provider plan --verify`
/// refuse values whose digest is not the sealed one.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "providers.platform.dev",
    version = "v1alpha1",
    kind = "PlanValues",
    plural = "planvalues",
    singular = "planvalues",
    shortname = "pvals",
    category = "sealed-providers",
    derive = "PartialEq",
    namespaced,
    doc = "The resolved chart values of a Workspace's sealed plans, stored once per content and named by their digest. Written by the admission webhook only; immutable.",
    printcolumn(name = "Digest", type_ = "string", json_path = ".spec.digest"),
    printcolumn(name = "Size", type_ = "integer", json_path = ".spec.size"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    validation = kube::core::Rule::new("self.spec == oldSelf.spec")
        .message("spec is immutable: PlanValues hold the values a sealed plan refers to by digest; delete the object instead (the webhook writes it again on the next seal of those values)")
        .field_path(".spec")
        .reason(kube::core::Reason::FieldValueForbidden)
)]
#[serde(rename_all = "camelCase")]
pub struct PlanValuesSpec {
    /// `sha256:` and the hex SHA-256 of the values' canonical JSON (keys sorted, no white
    /// space): what the plan's `valuesDigest` names and its seal covers.
    #[schemars(regex(pattern = r"^sha256:[0-9a-f]{64}$"))]
    pub digest: String,
    /// The length in bytes of the canonical JSON.
    #[schemars(range(min = 2, max = crate::plan_values::MAX_CANONICAL_BYTES))]
    pub size: i64,
    /// The canonical JSON, gzip-compressed, in base64.
    #[schemars(length(max = crate::plan_values::MAX_DATA_LENGTH))]
    pub data: String,
}
