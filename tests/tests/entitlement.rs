//! Who may use which recipe, at seal time, through the whole system: the webhook asks RBAC
//! for `use` on `recipes/<name>` as the requesting user, beside `install` on the edge.
//! carol (impersonated by the platform admin, in the `tenants` group) may install onto
//! edge-1 and work in org-a, but holds no recipe until the platform grants her one.

use std::path::Path;

use anyhow::{Context, ensure};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use providers_tests::{
    User,
    installer::{self, wait_workspace},
    kubectl, platform, plugin,
    system::{self, System, publish},
};
use serde_json::json;

async fn system() -> anyhow::Result<&'static System> {
    system::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane"))).await
}

fn manifest(name: &str, recipe: &str) -> String {
    format!(
        "apiVersion: providers.platform.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\n  namespace: org-a\nspec:\n  recipe: {recipe}\n  edge: edge-1\n"
    )
}

/// carol's Workspace of a recipe she was not granted is refused when it would be sealed,
/// naming the recipe and the RBAC rule to ask for; granted that one recipe, the same
/// create is sealed for her and installs; another recipe is still refused. `kubectl
/// provider recipes` tells her which she may use.
#[tokio::test]
async fn a_recipe_is_used_only_by_those_granted_it() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "entitled-hello", "hello", &["0.1.0"]).await?;
    publish(env, "entitled-other", "hello", &["0.1.0"]).await?;
    let admin = env.hub_admin().await?;
    platform::grant_install(&admin, "carol", installer::EDGE).await?;
    let tenant: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "providers-tenants-carol", "namespace": "org-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "providers-tenant"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}],
    }))?;
    Api::<RoleBinding>::namespaced(admin.clone(), "org-a")
        .patch(
            "providers-tenants-carol",
            &PatchParams::apply("platform").force(),
            &Patch::Apply(&tenant),
        )
        .await?;
    let platform_admin = env.hub.kubeconfig(User::PlatformAdmin);
    let as_carol = ["--as", "carol", "--as-group", "tenants"];
    let create = |name: &str, recipe: &str| -> anyhow::Result<std::process::Output> {
        let file = tempfile::Builder::new().suffix(".yaml").tempfile()?;
        std::fs::write(file.path(), manifest(name, recipe))?;
        let path = file.path().display().to_string();
        let mut args = as_carol.to_vec();
        args.extend(["create", "-f", path.as_str()]);
        kubectl::run(platform_admin, &args)
    };

    let refused = create("carols-hello", "entitled-hello")?;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    ensure!(!refused.status.success(), "refused without the grant");
    ensure!(
        stderr.contains("spec.recipe: user \"carol\" may not use recipe \"entitled-hello\"")
            && stderr.contains("the `use` verb on recipes/entitled-hello"),
        "the denial names the recipe and the rule: {stderr}"
    );
    let listed = plugin::run(
        platform_admin,
        &["recipes", "--as", "carol", "--as-group", "tenants"],
    )?;
    let listed = listed.ok()?;
    ensure!(
        listed
            .lines()
            .any(|l| l.starts_with("entitled-hello ") && l.split_whitespace().nth(1) == Some("no")),
        "recipes says no before the grant:\n{listed}"
    );

    platform::grant_use(&admin, "carol", "entitled-hello").await?;
    let sealed = create("carols-hello", "entitled-hello")?;
    ensure!(
        sealed.status.success(),
        "sealed once granted: {}",
        String::from_utf8_lossy(&sealed.stderr)
    );
    let ws = wait_workspace(&admin, "org-a", "carols-hello", "installed", |ws| {
        installer::has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    let plan = ws.spec.plan.context("sealed")?.plan;
    ensure!(plan.owner.username == "carol" && plan.provider == "entitled-hello");
    let listed = plugin::run(
        platform_admin,
        &["recipes", "--as", "carol", "--as-group", "tenants"],
    )?;
    let listed = listed.ok()?;
    for (recipe, word) in [("entitled-hello", "yes"), ("entitled-other", "no")] {
        ensure!(
            listed.lines().any(|l| l.starts_with(&format!("{recipe} "))
                && l.split_whitespace().nth(1) == Some(word)),
            "{recipe}: {word}:\n{listed}"
        );
    }

    let other = create("carols-other", "entitled-other")?;
    ensure!(
        !other.status.success()
            && String::from_utf8_lossy(&other.stderr)
                .contains("may not use recipe \"entitled-other\""),
        "a grant of one recipe is not a grant of another: {other:?}"
    );
    Ok(())
}
