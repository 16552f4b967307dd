//! Builders of Recipes, Edges and Workspaces for tests, with sensible defaults.
//!
//! Each builder returns a plain value: a test changes what it cares about with struct
//! update syntax, so what differs from the default stays visible where it is used:
//!
//! ```text
//! let spec = RecipeSpec {
//!     values_schema: vec![replica_count()],
//!     ..recipe_spec()
//! };
//! ```
//!
//! Compiled for this crate's unit tests, and for other crates with the `testing` feature.

use serde_json::{Value, json};

use crate::api::{
    ChartRef, Edge, EdgeSpec, Owner, Plan, Recipe, RecipeSpec, SecretKeyRef, ValueField, ValueType,
    Workspace, WorkspaceIdentity, WorkspaceSpec,
};

/// The repository of [`recipe_spec`]'s chart.
pub const REPOSITORY: &str = "https://charts.example/stable";

/// The namespace of the platform, where the edges' kubeconfig Secrets are.
pub const SYSTEM_NAMESPACE: &str = "providers-system";

/// The workspace UUID of [`edge_spec`]'s edge.
pub const EDGE_WORKSPACE_UUID: &str = "8c6b7c1e-0000-4000-8000-000000000001";

/// The chart `name` in [`REPOSITORY`].
pub fn chart(name: &str) -> ChartRef {
    ChartRef {
        repository: REPOSITORY.into(),
        name: name.into(),
    }
}

/// Version strings, newest first as a Recipe lists them.
pub fn versions(versions: &[&str]) -> Vec<String> {
    versions.iter().map(|v| (*v).to_owned()).collect()
}

/// A Recipe of the chart `demo` in [`REPOSITORY`], versions 1.2.0 and 1.1.0, installed as
/// release `demo` in namespace `demo`; no default values, no values schema, no execution
/// rules, no runtime credential.
pub fn recipe_spec() -> RecipeSpec {
    RecipeSpec {
        drift: None,
        chart: chart("demo"),
        versions: versions(&["1.2.0", "1.1.0"]),
        namespace: Some("demo".into()),
        release: Some("demo".into()),
        values: None,
        values_schema: vec![],
        execution: vec![],
        runtime_credential: None,
    }
}

/// The Recipe `name` of `spec`.
pub fn recipe(name: &str, spec: RecipeSpec) -> Recipe {
    Recipe::new(name, spec)
}

/// A value field at `path` of `type_`, with no further constraint.
pub fn field(path: &str, type_: ValueType) -> ValueField {
    ValueField {
        path: path.into(),
        type_,
        description: None,
        enum_: None,
        pattern: None,
        max_length: None,
        minimum: None,
        maximum: None,
    }
}

/// The value field `replicaCount`: an integer from 1 to 5.
pub fn replica_count() -> ValueField {
    ValueField {
        minimum: Some(1.0),
        maximum: Some(5.0),
        ..field("replicaCount", ValueType::Integer)
    }
}

/// The edge `name`: cluster `<name>-cluster`, workspace [`EDGE_WORKSPACE_UUID`], its
/// kubeconfig in the Secret `<name>` (key `kubeconfig`) in [`SYSTEM_NAMESPACE`].
pub fn edge_spec(name: &str) -> EdgeSpec {
    EdgeSpec {
        cluster_id: format!("{name}-cluster"),
        workspace_uuid: EDGE_WORKSPACE_UUID.into(),
        kubeconfig_secret_ref: SecretKeyRef {
            namespace: SYSTEM_NAMESPACE.into(),
            name: name.into(),
            key: "kubeconfig".into(),
        },
    }
}

/// The Edge `name` of [`edge_spec`].
pub fn edge(name: &str) -> Edge {
    Edge::new(name, edge_spec(name))
}

/// What a tenant writes: the Recipe `demo` on the edge `edge-1`, the Recipe's default
/// version, no values, no retry, no plan.
pub fn workspace_spec() -> WorkspaceSpec {
    WorkspaceSpec {
        recipe: "demo".into(),
        edge: "edge-1".into(),
        version: None,
        values: None,
        retry: None,
        plan: None,
    }
}

/// [`workspace_spec`] with these values.
pub fn with_values(values: Value) -> WorkspaceSpec {
    WorkspaceSpec {
        values: Some(values),
        ..workspace_spec()
    }
}

/// The Workspace `name` of `spec`, with no namespace (the API it is written to gives it).
pub fn workspace(name: &str, spec: WorkspaceSpec) -> Workspace {
    Workspace::new(name, spec)
}

/// The Workspace `namespace/name` of `spec`.
pub fn workspace_in(namespace: &str, name: &str, spec: WorkspaceSpec) -> Workspace {
    let mut ws = Workspace::new(name, spec);
    ws.metadata.namespace = Some(namespace.into());
    ws
}

/// Attempt 1 (`a1`) of the Workspace org-a/ws, before its UID is known, owned by alice: the
/// chart `hello` 0.1.0 from `https://charts.example`, release `hello` in namespace
/// `org-a-hello` with no values, on the edge `edge-1` (cluster `c1`, workspace `u1`), run by
/// the Job `hello-1` with no execution rules and no runtime credential; not sealed yet, not
/// a dry run, no cause.
pub fn plan() -> Plan {
    Plan {
        drift: None,
        attempt: 1,
        attempt_id: "a1".into(),
        retry: 0,
        workspace: WorkspaceIdentity {
            namespace: "org-a".into(),
            name: "ws".into(),
            uid: String::new(),
        },
        org: "org-a".into(),
        provider: "hello".into(),
        owner: Owner {
            username: "alice".into(),
            ..Default::default()
        },
        chart: ChartRef {
            repository: "https://charts.example".into(),
            name: "hello".into(),
        },
        version: "0.1.0".into(),
        release: "hello".into(),
        namespace: "org-a-hello".into(),
        values_digest: None,
        values: Some(json!({})),
        edge_name: "edge-1".into(),
        cluster: "c1".into(),
        edge_workspace_uuid: "u1".into(),
        job: "hello-1".into(),
        execution: vec![],
        runtime_credential: None,
        sealed_at: None,
        dry_run: false,
        cause: None,
        restores: None,
    }
}

/// Drift found at the Unix epoch, with `reason` and `message`, naming no revision and no
/// object, before any automatic repair.
pub fn drift(reason: &str, message: &str) -> crate::api::Drift {
    crate::api::Drift {
        reason: reason.into(),
        message: message.into(),
        revision: None,
        record_uid: None,
        detected_at: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ),
        objects: Vec::new(),
        automatic_repair: None,
    }
}
