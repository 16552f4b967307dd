//! The project's own objects on a test control plane: CRDs, RBAC, recipes, edges.

use std::path::Path;

use anyhow::Context;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use serde_json::json;

use crate::{binaries, controlplane::ControlPlaneInfo, kubectl, users::User};

/// Applies the CRDs, the namespace, the admission policies and the tenant RBAC from
/// manifests/ with the real kubectl, and waits until the CRDs are Established.
pub fn install(plane: &ControlPlaneInfo) -> anyhow::Result<()> {
    let root = binaries::workspace_root()?;
    let admin = plane.kubeconfig(User::Admin);
    for (flag, path) in [
        ("-k", "manifests/crds"),
        ("-k", "manifests/namespace"),
        ("-k", "manifests/policies"),
        ("-f", "manifests/rbac/tenant.yaml"),
    ] {
        let path = root.join(path).display().to_string();
        kubectl::ok(
            admin,
            &[
                "apply",
                "--server-side",
                "--field-manager=platform",
                flag,
                &path,
            ],
        )?;
    }
    kubectl::ok(
        admin,
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/recipes.providers.platform.dev",
            "crd/edges.providers.platform.dev",
            "crd/workspaces.providers.platform.dev",
        ],
    )?;
    Ok(())
}

/// Applies a YAML document with kubectl (server-side).
pub fn apply_yaml(kubeconfig: &Path, yaml: &str) -> anyhow::Result<()> {
    let file = tempfile::Builder::new().suffix(".yaml").tempfile()?;
    std::fs::write(file.path(), yaml)?;
    kubectl::ok(
        kubeconfig,
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=platform",
            "-f",
            &file.path().display().to_string(),
        ],
    )?;
    Ok(())
}

/// Grants `user` the `install` verb on the Edge `edge` only.
pub async fn grant_install(admin: &Client, user: &str, edge: &str) -> anyhow::Result<()> {
    grant_one(
        admin,
        user,
        "edges",
        edge,
        "install",
        &format!("providers-install-{edge}-{user}"),
    )
    .await
}

/// Grants `user` the `use` verb on the Recipe `recipe` only, as a platform team grants one
/// recipe to one team (docs/security.md).
pub async fn grant_use(admin: &Client, user: &str, recipe: &str) -> anyhow::Result<()> {
    grant_one(
        admin,
        user,
        "recipes",
        recipe,
        "use",
        &format!("providers-use-{recipe}-{user}"),
    )
    .await
}

/// A ClusterRole `name` allowing `verb` on `resource/object` in the API group, bound to
/// `user` by a ClusterRoleBinding of the same name.
async fn grant_one(
    admin: &Client,
    user: &str,
    resource: &str,
    object: &str,
    verb: &str,
    name: &str,
) -> anyhow::Result<()> {
    let apply = PatchParams::apply("platform").force();
    let role: ClusterRole = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["providers.platform.dev"], "resources": [resource], "resourceNames": [object], "verbs": [verb]}]
    }))?;
    Api::<ClusterRole>::all(admin.clone())
        .patch(name, &apply, &Patch::Apply(&role))
        .await
        .with_context(|| format!("{verb} role"))?;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
    }))?;
    Api::<ClusterRoleBinding>::all(admin.clone())
        .patch(name, &apply, &Patch::Apply(&binding))
        .await
        .with_context(|| format!("{verb} binding"))?;
    Ok(())
}
