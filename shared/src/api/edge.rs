use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A registered edge cluster that providers can be installed onto. Cluster-scoped and
/// writable only by the platform; tenants get the `install` verb on `edges` with
/// `resourceNames: [<edge>]` through RBAC.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "providers.platform.dev",
    version = "v1alpha1",
    kind = "Edge",
    plural = "edges",
    category = "sealed-providers",
    derive = "PartialEq",
    status = "EdgeStatus",
    doc = "A registered edge cluster that providers can be installed onto.",
    printcolumn(name = "Cluster", type_ = "string", json_path = ".spec.clusterID"),
    printcolumn(name = "Ready", type_ = "boolean", json_path = ".status.ready"),
    printcolumn(
        name = "Workspace",
        type_ = "string",
        json_path = ".spec.workspaceUUID",
        priority = "1"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct EdgeSpec {
    /// The edge cluster's identifier, recorded in every plan that targets it.
    #[serde(rename = "clusterID")]
    pub cluster_id: String,
    /// The UUID of the edge workspace that owns this cluster.
    #[serde(rename = "workspaceUUID")]
    pub workspace_uuid: String,
    /// The platform-owned Secret holding the kubeconfig the hub uses to reach the edge.
    pub kubeconfig_secret_ref: SecretKeyRef,
}

/// A key in a Secret in a named namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// The Secret's namespace.
    pub namespace: String,
    /// The Secret's name.
    pub name: String,
    /// The key in the Secret's data. Defaults to `kubeconfig`.
    #[serde(default = "default_kubeconfig_key")]
    pub key: String,
}

fn default_kubeconfig_key() -> String {
    "kubeconfig".to_owned()
}

/// What the installer last observed of the edge.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EdgeStatus {
    /// Whether the edge's API answered the installer's last probe.
    #[serde(default)]
    pub ready: bool,
    /// The API endpoint the kubeconfig points at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// When the installer last probed the edge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// The installer replica that works the edge (its identity), as of `lastProbeTime`:
    /// the holder of the edge's fencing Lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installer: Option<String>,
    /// Standard conditions; `Ready` mirrors `ready` with a reason and message.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
