//! Objects for the unit tests of the views and the state.

use serde_json::{Value, json};

/// A sealed plan (with a made-up signature) for attempt `attempt`.
pub fn plan_json(attempt: i64) -> Value {
    json!({
        "attempt": attempt,
        "attemptID": format!("att-{attempt}"),
        "retry": attempt - 1,
        "workspace": { "namespace": "org-a", "name": "demo", "uid": "uid-demo" },
        "org": "org-a",
        "provider": "podinfo",
        "owner": { "username": "alice" },
        "chart": { "repository": "https://charts.example/stable", "name": "podinfo" },
        "version": "6.5.0",
        "release": "podinfo",
        "namespace": "podinfo",
        "values": { "replicaCount": 2, "ui": { "message": "hello" } },
        "edgeName": "edge-1",
        "cluster": "cluster-1",
        "edgeWorkspaceUUID": "0b6f0f4e-7c1a-4d55-9d1e-3b8f6f1d2a10",
        "job": format!("podinfo-demo-{attempt}"),
        "execution": [],
        "seal": { "keyID": "0123456789abcdef", "algorithm": "Ed25519", "signature": "c2ln" }
    })
}

/// A Recipe with a values schema.
pub fn recipe_json() -> Value {
    json!({
        "apiVersion": "providers.platform.dev/v1alpha1",
        "kind": "Recipe",
        "metadata": { "name": "podinfo" },
        "spec": {
            "chart": { "repository": "https://charts.example/stable", "name": "podinfo" },
            "versions": ["6.5.0", "6.4.0"],
            "namespace": "podinfo",
            "release": "podinfo",
            "values": { "replicaCount": 1 },
            "valuesSchema": [
                { "path": "replicaCount", "type": "integer", "minimum": 1.0, "maximum": 5.0, "description": "Pods to run" },
                { "path": "ui.color", "type": "string", "pattern": "^#[0-9a-f]{6}$" },
                { "path": "ui.message", "type": "string", "maxLength": 64 },
                { "path": "tier", "type": "string", "enum": ["small", "large"] }
            ]
        }
    })
}

/// An Edge.
pub fn edge_json(name: &str, ready: bool) -> Value {
    json!({
        "apiVersion": "providers.platform.dev/v1alpha1",
        "kind": "Edge",
        "metadata": { "name": name },
        "spec": {
            "clusterID": format!("cluster-{name}"),
            "workspaceUUID": "0b6f0f4e-7c1a-4d55-9d1e-3b8f6f1d2a10",
            "kubeconfigSecretRef": { "namespace": "providers-edges", "name": format!("{name}-kubeconfig") }
        },
        "status": { "ready": ready, "server": "https://10.0.0.7:6443", "installer": "installer-7" }
    })
}

/// A Workspace sealed for attempt 1 with the given status.
pub fn workspace_json(status: Value) -> Value {
    json!({
        "apiVersion": "providers.platform.dev/v1alpha1",
        "kind": "Workspace",
        "metadata": { "name": "demo", "namespace": "org-a", "uid": "uid-demo",
                      "creationTimestamp": "2025-01-01T00:00:00Z", "generation": 1 },
        "spec": { "recipe": "podinfo", "edge": "edge-1", "values": { "replicaCount": 2 }, "plan": plan_json(1) },
        "status": status,
    })
}
