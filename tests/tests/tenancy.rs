//! Tenancy and lifecycle through the whole system: the real webhook and installer on a hub,
//! an edge whose Jobs the job runner runs with the real helm, and tenants using the real
//! kubectl and `kubectl provider`.
//!
//! - two organizations install the same Recipe on the same edge;
//! - deletion finishes at once when nothing was prepared, and through the platform's
//!   audited way out when the edge is gone for good;
//! - raising spec.retry while an attempt runs is a no-op with a warning (client-side and
//!   server-side apply);
//! - a failed attempt says why in helm's own words, and its log reaches the tenant.

use std::{net::SocketAddr, path::Path, time::Duration};

use anyhow::{Context, bail, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, Client, ResourceExt,
    api::{Patch, PatchParams},
};
use providers_shared::api::Recipe;
use providers_tests::{
    User,
    installer::{self, Environment, eventually, has_condition, status_of, wait_workspace},
    kubectl, platform, plugin,
    system::{self, System, first_job, publish},
    tcpproxy::TcpProxy,
};
use serde_json::json;

async fn system() -> anyhow::Result<&'static System> {
    system::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane"))).await
}

fn kubeconfig(env: &Environment, user: User) -> &Path {
    env.hub.kubeconfig(user)
}

async fn greeting(edge: &Client, namespace: &str, release: &str) -> anyhow::Result<Option<String>> {
    Ok(Api::<ConfigMap>::namespaced(edge.clone(), namespace)
        .get_opt(&format!("{release}-greeting"))
        .await?
        .and_then(|c| c.data?.get("greeting").cloned()))
}

/// Tenants on a shared edge are isolated from each other: alice (org-a) and bob (org-b)
/// install the same Recipe on the same edge; each gets a namespace of its own with its own
/// values, and deleting one leaves the other.
#[tokio::test]
async fn two_organizations_install_the_same_recipe_on_one_edge() -> anyhow::Result<()> {
    let system = system().await?;
    let env = system.env;
    let edge = env.edge_admin().await?;
    publish(env, "hello-shared", "hello", &["0.1.0"]).await?;
    for (user, org, value) in [
        (User::Alice, "org-a", "from org-a"),
        (User::Bob, "org-b", "from org-b"),
    ] {
        let installed = plugin::run(
            kubeconfig(env, user),
            &[
                "install",
                "shared",
                "--recipe",
                "hello-shared",
                "--edge",
                "edge-1",
                "--set",
                &format!("greeting={value}"),
                "--wait",
                "--timeout",
                "120s",
            ],
        )?;
        if let Err(error) = installed.ok() {
            bail!("{error:#}\n{}", system.diagnose(org, "shared").await);
        }
    }
    let release = "hello-shared";
    ensure!(
        greeting(&edge, "org-a-hello-shared", release)
            .await?
            .as_deref()
            == Some("from org-a")
    );
    ensure!(
        greeting(&edge, "org-b-hello-shared", release)
            .await?
            .as_deref()
            == Some("from org-b")
    );
    let target = plugin::run(kubeconfig(env, User::Bob), &["target", "shared"])?;
    ensure!(target.ok()?.contains("org-b-hello-shared"), "{target:?}");

    plugin::run(
        kubeconfig(env, User::Alice),
        &["delete", "shared", "--wait", "--timeout", "60s"],
    )?
    .ok()?;
    // Bob's release is untouched: his namespace, his values, his Workspace still Ready.
    ensure!(
        greeting(&edge, "org-b-hello-shared", release)
            .await?
            .as_deref()
            == Some("from org-b")
    );
    let bob = installer::workspace(&env.hub.client(User::Bob).await?, "org-b", "shared").await?;
    ensure!(has_condition(&bob, "Ready", "True", "Installed"));
    let namespace = Api::<Namespace>::all(edge.clone())
        .get("org-a-hello-shared")
        .await?;
    ensure!(
        namespace
            .labels()
            .get("providers.platform.dev/released")
            .map(String::as_str)
            == Some("true"),
        "alice's namespace is released, not deleted: {:?}",
        namespace.labels()
    );
    Ok(())
}

/// Names derived from a Workspace must be valid: a denial says so at admission.
#[tokio::test]
async fn a_derived_name_that_is_not_valid_is_denied_at_admission() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "per-workspace", "hello", &["0.1.0"]).await?;
    Api::<Recipe>::all(env.hub_admin().await?)
        .patch(
            "per-workspace",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"namespace": "{org}-{workspace}-hello"}})),
        )
        .await?;
    let name = "w".repeat(60);
    let install = [
        "install",
        &name,
        "--recipe",
        "per-workspace",
        "--edge",
        "edge-1",
    ];
    // The webhook reads Recipes from its watch cache, which a loaded machine can delay:
    // dry runs find the moment it has seen the new template, without storing anything.
    eventually(
        "the webhook to see the namespace template",
        Duration::from_secs(20),
        || async {
            let dry_run = plugin::run(
                kubeconfig(env, User::Alice),
                &[&install[..], &["--dry-run=server"]].concat(),
            )?;
            Ok(
                (dry_run.code != 0 && dry_run.stderr.contains("derives the namespace"))
                    .then_some(()),
            )
        },
    )
    .await?;
    let run = plugin::run(kubeconfig(env, User::Alice), &install)?;
    let stderr = run.failed()?;
    ensure!(
        stderr.contains("derives the namespace") && stderr.contains("1 to 63 characters"),
        "{stderr}"
    );
    Ok(())
}

/// Deletion waits for the edge only while something of the Workspace is on it: a Workspace
/// whose edge never became Ready is deleted at once; one whose edge is gone after something
/// was prepared waits (and says so) until the platform abandons it, which a tenant may not
/// do.
#[tokio::test]
async fn deletion_always_finishes() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    let admin = env.hub_admin().await?;
    let edge_address: SocketAddr = env.edge.server.trim_start_matches("https://").parse()?;
    // An edge that never answers, and one behind a proxy that will be cut.
    let dead = TcpProxy::start(edge_address).await?;
    dead.cut();
    let gone = TcpProxy::start(edge_address).await?;
    for (name, proxy) in [("edge-dead", &dead), ("edge-gone", &gone)] {
        installer::register_edge(
            &env.hub,
            &env.edge,
            name,
            &format!("cluster-{name}"),
            installer::EDGE_WORKSPACE,
            Some(&format!("https://{}", proxy.addr)),
        )
        .await?;
        platform::grant_install(&admin, "alice", name).await?;
    }
    publish(env, "hello-never", "hello", &["0.1.0"]).await?;
    publish(env, "broken-stranded", "broken", &["0.1.0"]).await?;
    let alice = kubeconfig(env, User::Alice);
    let alice_client = env.hub.client(User::Alice).await?;

    plugin::run(
        alice,
        &[
            "install",
            "never",
            "--recipe",
            "hello-never",
            "--edge",
            "edge-dead",
        ],
    )?
    .ok()?;
    wait_workspace(
        &alice_client,
        "org-a",
        "never",
        "waiting for its edge",
        |ws| status_of(ws).attempt == Some(1),
    )
    .await?;
    let status = plugin::run(alice, &["status", "never"])?;
    ensure!(
        status
            .ok()?
            .contains("On delete:  finishes at once: nothing was prepared on edge edge-dead"),
        "{status:?}"
    );
    plugin::run(alice, &["delete", "never", "--wait", "--timeout", "30s"])?.ok()?;

    // Prepared on edge-gone (its Job held), then the edge goes away for good.
    let job = first_job("org-a", "stranded", "broken-stranded");
    env.runner.hold(&job);
    plugin::run(
        alice,
        &[
            "install",
            "stranded",
            "--recipe",
            "broken-stranded",
            "--edge",
            "edge-gone",
        ],
    )?
    .ok()?;
    wait_workspace(&alice_client, "org-a", "stranded", "its Job runs", |ws| {
        status_of(ws).job_uid.is_some()
    })
    .await?;
    gone.cut();
    plugin::run(alice, &["delete", "stranded"])?.ok()?;
    let waiting = wait_workspace(
        &alice_client,
        "org-a",
        "stranded",
        "waiting for the edge",
        |ws| installer::condition(ws, "Ready").is_some_and(|c| c.message.contains("--abandon")),
    )
    .await?;
    ensure!(waiting.metadata.deletion_timestamp.is_some());
    let status = plugin::run(alice, &["status", "stranded"])?;
    ensure!(
        status
            .ok()?
            .contains("Deletion:   finishes once the installer has cleaned up on edge edge-gone, waiting while it is unreachable"),
        "{status:?}"
    );
    // A tenant cannot take the way out.
    let refused = plugin::run(alice, &["delete", "stranded", "--abandon"])?;
    ensure!(
        refused
            .failed()?
            .contains("only the platform team abandons"),
        "{refused:?}"
    );
    // The platform can, and it is recorded.
    plugin::run(
        kubeconfig(env, User::PlatformAdmin),
        &[
            "delete",
            "stranded",
            "-n",
            "org-a",
            "--abandon",
            "--reason",
            "edge-gone was decommissioned",
            "--wait",
            "--timeout",
            "30s",
        ],
    )?
    .ok()?;
    let events = kubectl::ok(
        kubeconfig(env, User::Admin),
        &[
            "-n",
            "org-a",
            "get",
            "events",
            "--field-selector",
            "reason=Abandoned",
            "-o",
            "jsonpath={.items[*].message}",
        ],
    )?;
    ensure!(events.contains("edge-gone was decommissioned"), "{events}");
    env.runner.release(&job);
    Ok(())
}

/// A retry raised while the attempt runs starts nothing: raising spec.retry while the
/// attempt runs is admitted with a warning and starts nothing, with client-side and with
/// server-side apply; once the attempt has failed, a further raise retries.
#[tokio::test]
async fn a_retry_during_an_active_attempt_is_a_no_op() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    let alice = kubeconfig(env, User::Alice);
    let alice_client = env.hub.client(User::Alice).await?;
    let manifest = |name: &str, retry: i64| {
        format!(
            "apiVersion: providers.platform.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\n  namespace: org-a\nspec:\n  recipe: {name}\n  edge: edge-1\n  retry: {retry}\n"
        )
    };
    for (name, mode) in [
        ("gitops-csa", "--server-side=false"),
        ("gitops-ssa", "--server-side"),
    ] {
        publish(env, name, "broken", &["0.1.0"]).await?;
        let file = tempfile::Builder::new().suffix(".yaml").tempfile()?;
        std::fs::write(file.path(), manifest(name, 0))?;
        let path = file.path().display().to_string();
        let created = first_job("org-a", name, name);
        env.runner.hold(&created);
        kubectl::ok(alice, &["apply", mode, "-f", &path])?;
        wait_workspace(&alice_client, "org-a", name, "attempt 1 runs", |ws| {
            has_condition(ws, "Progressing", "True", "JobRunning")
        })
        .await?;
        std::fs::write(file.path(), manifest(name, 1))?;
        let out = kubectl::run(alice, &["apply", mode, "-f", &path])?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        ensure!(out.status.success(), "{mode}: {stderr}");
        ensure!(
            stderr.contains("raise spec.retry again"),
            "{mode}: a warning: {stderr}"
        );
        let ws = installer::workspace(&alice_client, "org-a", name).await?;
        ensure!(
            ws.spec.plan.context("sealed")?.plan.attempt == 1,
            "{mode}: no new attempt"
        );
        // The attempt fails (the chart does not render); the raise made while it ran
        // starts nothing by itself...
        env.runner.release(&created);
        wait_workspace(&alice_client, "org-a", name, "attempt 1 failed", |ws| {
            has_condition(ws, "Failed", "True", "JobFailed")
        })
        .await?;
        let out = kubectl::run(alice, &["apply", mode, "-f", &path])?;
        ensure!(out.status.success());
        // No wait: an attempt is sealed only by the webhook, in the write that starts it,
        // and kubectl's write was answered before it returned.
        let ws = installer::workspace(&alice_client, "org-a", name).await?;
        ensure!(
            ws.spec.plan.context("sealed")?.plan.attempt == 1,
            "{mode}: still attempt 1"
        );
        // ...a further raise retries.
        std::fs::write(file.path(), manifest(name, 2))?;
        kubectl::ok(alice, &["apply", mode, "-f", &path])?;
        let ws = installer::workspace(&alice_client, "org-a", name).await?;
        ensure!(
            ws.spec.plan.context("sealed")?.plan.attempt == 2,
            "{mode}: attempt 2"
        );
    }
    Ok(())
}

/// A failed attempt says why in helm's own words — a version that does not exist, a
/// template that does not render — in the condition, the attempt's record and `kubectl
/// provider status`; `kubectl provider logs` prints the runner's log.
#[tokio::test]
async fn a_failure_says_why_in_helms_words() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    // A version the Recipe offers but the repository does not have.
    publish(env, "hello-missing", "hello", &["9.9.9"]).await?;
    publish(env, "broken-render", "broken", &["0.1.0"]).await?;
    let alice = kubeconfig(env, User::Alice);
    let alice_client = env.hub.client(User::Alice).await?;
    for (name, args, helm_says) in [
        (
            "missing-version",
            vec!["--recipe", "hello-missing"],
            "9.9.9",
        ),
        (
            "not-rendering",
            vec!["--recipe", "broken-render"],
            "values.mustBeSet is required",
        ),
    ] {
        let mut install = vec!["install", name, "--edge", "edge-1"];
        install.extend(args);
        plugin::run(alice, &install)?.ok()?;
        let failed = wait_workspace(&alice_client, "org-a", name, "failed", |ws| {
            has_condition(ws, "Failed", "True", "JobFailed")
        })
        .await?;
        let message = installer::condition(&failed, "Failed")
            .map(|c| c.message.clone())
            .unwrap_or_default();
        ensure!(message.contains(helm_says), "{name}: {message}");
        ensure!(
            message.contains("Error:"),
            "{name}: helm's own words: {message}"
        );
        ensure!(
            !message.contains("see its logs on edge"),
            "{name}: {message}"
        );
        ensure!(
            status_of(&failed).attempts[0]
                .message
                .as_deref()
                .is_some_and(|m| m.contains(helm_says)),
            "{name}: the attempt's record"
        );
        let status = plugin::run(alice, &["status", name])?;
        ensure!(status.ok()?.contains(helm_says), "{status:?}");
        let logs = eventually("the runner's log", Duration::from_secs(30), || async {
            let run = plugin::run(alice, &["logs", name])?;
            Ok((run.code == 0).then_some(run.stdout))
        })
        .await?;
        ensure!(logs.contains(helm_says), "{name}: {logs}");
    }
    Ok(())
}
