//! The GitOps engines agree with what the Workspace's status says, asked through their own
//! code (built from their Go modules by `tests/peers/build.sh gitops-engines`) against the
//! whole system: the real webhook seals, the installer runs the Job on the edge with the
//! real helm.
//!
//! - kstatus, as `sigs.k8s.io/cli-utils` and Flux's fork compute it: InProgress before the
//!   installer's first write and while an attempt runs, Current after success, Failed
//!   after a failure;
//! - Flux's apply engine (`github.com/fluxcd/pkg/ssa`): the same manifest applied twice is
//!   `unchanged` the second time and starts no attempt; its wait returns once the install
//!   finished and fails fast on a failed one;
//! - the Argo CD health script of docs/gitops.md under gopher-lua: Progressing, Healthy,
//!   Degraded, and Progressing again while a generation is not yet observed.

use std::{path::Path, time::Duration};

use anyhow::{Context, ensure};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, PostParams},
};
use providers_shared::api::Workspace;
use providers_tests::{
    User,
    engines::{self, Kstatus},
    installer::{has_condition, wait_workspace},
    system::{self, System, first_job, publish},
};
use serde_json::{Value, json};

async fn system() -> anyhow::Result<&'static System> {
    system::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane"))).await
}

fn manifest(name: &str, recipe: &str) -> String {
    format!(
        "apiVersion: providers.platform.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\n  namespace: org-a\nspec:\n  recipe: {recipe}\n  edge: edge-1\n  values:\n    greeting: from git\n"
    )
}

/// The Workspace exactly as the API server returns it.
async fn raw(client: &Client, name: &str) -> anyhow::Result<Value> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "org-a",
        &ApiResource::erase::<Workspace>(&()),
    );
    Ok(serde_json::to_value(api.get(name).await?)?)
}

fn both(kstatus: &Kstatus, expected: &str, when: &str) -> anyhow::Result<()> {
    ensure!(
        kstatus.cli_utils.status == expected && kstatus.flux.status == expected,
        "{when}: kstatus should be {expected}: {kstatus:?}"
    );
    Ok(())
}

fn attempt_of(object: &Value) -> (Option<i64>, Option<String>) {
    let plan = &object["spec"]["plan"];
    (
        plan["attempt"].as_i64(),
        plan["attemptID"].as_str().map(str::to_owned),
    )
}

/// A Workspace applied by Flux's engine: InProgress (kstatus) and Progressing (Argo CD)
/// while its attempt runs; the same manifest again is unchanged and starts nothing; once
/// the install finished, Flux's wait returns, kstatus says Current and Argo CD Healthy; a
/// generation the installer has not acted on reads as in progress to both.
#[tokio::test]
async fn engines_follow_an_attempt_from_git_to_installed() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "engines-hello", "hello", &["0.1.0"]).await?;
    let alice = env.hub.kubeconfig(User::Alice);
    let alice_client = env.hub.client(User::Alice).await?;
    let script_text = engines::argocd_health_script_from_docs()?;
    let script = tempfile::Builder::new().suffix(".lua").tempfile()?;
    std::fs::write(script.path(), &script_text)?;
    let file = tempfile::Builder::new().suffix(".yaml").tempfile()?;
    std::fs::write(file.path(), manifest("from-git", "engines-hello"))?;

    let job = first_job("org-a", "from-git", "engines-hello");
    env.runner.hold(&job);
    let first = engines::ssa_apply(alice, file.path(), None).await?;
    ensure!(
        first.changes.len() == 1 && first.changes[0].action == "created",
        "the first apply creates the Workspace: {first:?}"
    );
    wait_workspace(
        &alice_client,
        "org-a",
        "from-git",
        "the attempt runs",
        |ws| has_condition(ws, "Progressing", "True", "JobRunning"),
    )
    .await?;
    let running = raw(&alice_client, "from-git").await?;
    both(
        &engines::kstatus(&running).await?,
        "InProgress",
        "while helm runs",
    )?;
    let health = engines::argocd_health(script.path(), &running).await?;
    ensure!(
        health.status == "Progressing",
        "while helm runs: {health:?}"
    );

    let again = engines::ssa_apply(alice, file.path(), None).await?;
    ensure!(
        again.changes.iter().all(|c| c.action == "unchanged"),
        "the same manifest again changes nothing: {again:?}"
    );
    let after = raw(&alice_client, "from-git").await?;
    ensure!(
        attempt_of(&after) == attempt_of(&running) && attempt_of(&after).0 == Some(1),
        "no new attempt: {:?} then {:?}",
        attempt_of(&running),
        attempt_of(&after)
    );

    // Flux's wait sees the install finish.
    env.runner.release(&job);
    let waited = match engines::ssa_apply(alice, file.path(), Some(Duration::from_secs(90))).await {
        Ok(waited) => waited,
        Err(error) => {
            let now = raw(&alice_client, "from-git").await?;
            anyhow::bail!(
                "{error:#}\nthe Workspace then: generation {} status {}\nkstatus: {:?}",
                now["metadata"]["generation"],
                now["status"],
                engines::kstatus(&now).await
            );
        }
    };
    ensure!(waited.waited, "Flux's wait returned: {waited:?}");
    ensure!(
        waited.changes.iter().all(|c| c.action == "unchanged"),
        "still unchanged: {waited:?}"
    );
    let installed = raw(&alice_client, "from-git").await?;
    ensure!(
        installed["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")),
        "Flux's wait returned only once Ready: {installed}"
    );
    ensure!(attempt_of(&installed).0 == Some(1), "still attempt 1");
    both(&engines::kstatus(&installed).await?, "Current", "installed")?;
    let health = engines::argocd_health(script.path(), &installed).await?;
    ensure!(health.status == "Healthy", "installed: {health:?}");

    // A spec change the installer has not acted on yet: the stored object with its
    // generation raised, as the API server returns it between the change and the
    // installer's next write.
    let mut unobserved = installed.clone();
    let generation = installed["metadata"]["generation"]
        .as_i64()
        .context("generation")?;
    unobserved["metadata"]["generation"] = json!(generation + 1);
    let health = engines::argocd_health(script.path(), &unobserved).await?;
    ensure!(
        health.status == "Progressing",
        "an unobserved generation: {health:?}"
    );
    both(
        &engines::kstatus(&unobserved).await?,
        "InProgress",
        "an unobserved generation",
    )?;
    Ok(())
}

/// A Workspace just created reads as not yet observed (the CRD defaults
/// `status.observedGeneration` to 0), so no engine takes it for done before the installer
/// has looked; once its attempt failed, kstatus says Failed, Argo CD Degraded, and Flux's
/// wait fails fast naming it.
#[tokio::test]
async fn engines_see_a_new_workspace_in_progress_and_a_failed_one_failed() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "engines-broken", "broken", &["0.1.0"]).await?;
    let alice = env.hub.kubeconfig(User::Alice);
    let alice_client = env.hub.client(User::Alice).await?;
    let script = tempfile::Builder::new().suffix(".lua").tempfile()?;
    std::fs::write(script.path(), engines::argocd_health_script_from_docs()?)?;

    let object: DynamicObject =
        serde_norway::from_str(&manifest("broken-from-git", "engines-broken"))?;
    let api: Api<DynamicObject> = Api::namespaced_with(
        alice_client.clone(),
        "org-a",
        &ApiResource::erase::<Workspace>(&()),
    );
    let created = serde_json::to_value(api.create(&PostParams::default(), &object).await?)?;
    ensure!(
        created["status"]["observedGeneration"] == json!(0),
        "the create's answer carries the default status: {}",
        created["status"]
    );
    both(
        &engines::kstatus(&created).await?,
        "InProgress",
        "just created",
    )?;
    let health = engines::argocd_health(script.path(), &created).await?;
    ensure!(health.status == "Progressing", "just created: {health:?}");

    wait_workspace(
        &alice_client,
        "org-a",
        "broken-from-git",
        "the attempt failed",
        |ws| has_condition(ws, "Failed", "True", "JobFailed"),
    )
    .await?;
    let failed = raw(&alice_client, "broken-from-git").await?;
    let kstatus = engines::kstatus(&failed).await?;
    both(&kstatus, "Failed", "after a failure")?;
    ensure!(
        kstatus
            .flux
            .message
            .contains("values.mustBeSet is required"),
        "kstatus carries helm's words: {kstatus:?}"
    );
    let health = engines::argocd_health(script.path(), &failed).await?;
    ensure!(
        health.status == "Degraded" && health.message.starts_with("JobFailed: "),
        "after a failure: {health:?}"
    );

    let file = tempfile::Builder::new().suffix(".yaml").tempfile()?;
    std::fs::write(file.path(), manifest("broken-from-git", "engines-broken"))?;
    let error = engines::ssa_apply(alice, file.path(), Some(Duration::from_secs(90)))
        .await
        .expect_err("Flux's wait fails on a failed attempt");
    let text = format!("{error:#}");
    ensure!(
        text.contains("broken-from-git") && text.contains("Failed"),
        "Flux's wait names the failed Workspace: {text}"
    );
    Ok(())
}
