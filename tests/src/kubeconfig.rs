//! Kubeconfig files, one per user.

use std::path::Path;

use base64::Engine;
use serde_json::json;

/// Writes a kubeconfig with one cluster, one user (a bearer token) and one context.
pub fn write(
    path: &Path,
    cluster: &str,
    server: &str,
    ca_pem: &str,
    user: &str,
    token: &str,
    namespace: Option<&str>,
) -> anyhow::Result<()> {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let mut context = json!({ "cluster": cluster, "user": user });
    if let Some(namespace) = namespace {
        context["namespace"] = json!(namespace);
    }
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": cluster, "cluster": { "server": server, "certificate-authority-data": ca } }],
        "users": [{ "name": user, "user": { "token": token } }],
        "contexts": [{ "name": format!("{user}@{cluster}"), "context": context }],
        "current-context": format!("{user}@{cluster}"),
    });
    std::fs::write(path, serde_norway::to_string(&config)?)?;
    Ok(())
}
