use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::execution::ExecutionRule;

/// A platform recipe: which chart a tenant may install, at which versions, with which
/// defaults, and which value paths a tenant may set. Cluster-scoped and writable only
/// by the platform.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "providers.platform.dev",
    version = "v1alpha1",
    kind = "Recipe",
    plural = "recipes",
    shortname = "rcp",
    category = "sealed-providers",
    derive = "PartialEq",
    doc = "A platform recipe: the chart, versions, defaults and tenant-settable values of a provider.",
    printcolumn(name = "Chart", type_ = "string", json_path = ".spec.chart.name"),
    printcolumn(
        name = "Repository",
        type_ = "string",
        json_path = ".spec.chart.repository",
        priority = "1"
    ),
    printcolumn(name = "Versions", type_ = "string", json_path = ".spec.versions"),
    printcolumn(
        name = "Namespace",
        type_ = "string",
        json_path = ".spec.namespace",
        priority = "1"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct RecipeSpec {
    /// The chart to install: an HTTP(S) chart repository on the platform's allowlist and
    /// the chart's name in it.
    pub chart: ChartRef,
    /// The chart versions a tenant may choose, newest first. The first entry is the
    /// default when a Workspace names no version.
    #[schemars(length(min = 1))]
    pub versions: Vec<String>,
    /// The namespace on the edge that the release is installed into, as a template:
    /// `{org}` (the Workspace's namespace), `{workspace}` (its name) and `{recipe}` (this
    /// Recipe's name) are replaced when a plan is sealed. Default `{org}-{recipe}`: one
    /// namespace per organization, so many organizations can install this Recipe on one
    /// edge. A name without placeholders is shared by every Workspace that installs this
    /// Recipe on an edge (the first one owns it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 253),
        regex(pattern = r"^([a-z0-9.-]|\{org\}|\{workspace\}|\{recipe\})+$")
    )]
    pub namespace: Option<String>,
    /// The Helm release name, as a template like `namespace`. Default `{recipe}` (release
    /// names are per namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 253),
        regex(pattern = r"^([a-z0-9.-]|\{org\}|\{workspace\}|\{recipe\})+$")
    )]
    pub release: Option<String>,
    /// Default chart values. Tenant values for the paths in valuesSchema are merged over
    /// these; nothing else a tenant writes reaches the chart.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::api::json_number::optional_value"
    )]
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub values: Option<Value>,
    /// The value paths a tenant may set, each with its type and bounds. A tenant value
    /// at any other path is refused at admission.
    #[serde(default)]
    pub values_schema: Vec<ValueField>,
    /// The rights the per-attempt runner gets in the release namespace on the edge,
    /// beyond what Helm needs for its own release records.
    #[serde(default)]
    #[schemars(length(max = 16))]
    pub execution: Vec<ExecutionRule>,
    /// How the installed provider reaches back to the hub. When set, the installer mints a
    /// hub ServiceAccount for the Workspace bound to this Role and passes its kubeconfig
    /// Secret's name to the chart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_credential: Option<RuntimeCredential>,
    /// What is not drift of this Recipe's releases on an edge (expected field managers,
    /// fields anyone may write). An object annotated `providers.platform.dev/drift: ignore`
    /// on the edge is left out too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<super::DriftPolicy>,
}

/// One value path a tenant may set, with its type and bounds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValueField {
    /// Dot-separated path into the chart values, for example `ingress.host`.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$"))]
    pub path: String,
    /// The JSON type the value must have.
    #[serde(rename = "type")]
    pub type_: ValueType,
    /// What the value is for; shown by `kubectl provider recipes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The only values allowed, written as strings (for numbers and booleans, their JSON text).
    #[serde(default, rename = "enum", skip_serializing_if = "Option::is_none")]
    pub enum_: Option<Vec<String>>,
    /// A regular expression a string value must match in full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The largest length of a string value, in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_length: Option<i64>,
    /// The smallest number allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    /// The largest number allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
}

/// The JSON type of a tenant-settable value.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ValueType {
    String,
    Integer,
    Number,
    Boolean,
}

/// The provider's own way back to the hub.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeCredential {
    /// The Role, in the organization's namespace on the hub, that the provider's hub
    /// ServiceAccount is bound to. Named `provider-runtime` or `provider-runtime-*`: the
    /// installer may bind no other Role (the providers-installer-confinement policy).
    #[schemars(regex(pattern = r"^provider-runtime(-[a-z0-9]([-a-z0-9]*[a-z0-9])?)?$"))]
    pub role: String,
    /// The chart value path that receives the name of the Secret holding the provider's
    /// hub kubeconfig.
    pub value_path: String,
}

/// A chart in an HTTP(S) chart repository.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChartRef {
    /// The chart repository's URL (the folder that holds index.yaml).
    pub repository: String,
    /// The chart's name in the repository.
    pub name: String,
}
