//! Rotating the sealing key while attempts are in flight, as the runbook in
//! docs/operations.md ("Rotating the sealing key") has it, against the real hub and edge API
//! servers, the real webhook and installer, and `kubectl provider` through the real kubectl:
//!
//! - attempts sealed with the old key and running on the edge when the webhook changes
//!   keys finish, and the installer records them;
//! - failed attempts sealed with the old key are retried (none refused), sealed with the new
//!   key; a kept plan sealed with the old key is rolled back to, sealed with the new key;
//! - new attempts carry the new key ID; `kubectl provider plan --verify` verifies plans of
//!   both keys;
//! - `kubectl provider keys --in-use OLD` exits 1 while a current or a kept plan uses the old
//!   key and 0 once none does; the old key then leaves the ConfigMap (and the webhook), and
//!   new attempts are still sealed and installed.

use std::{path::Path, process::Command, time::Duration};

use anyhow::{Context, bail, ensure};
use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{ConfigMap, Secret},
};
use kube::{Api, Client};
use providers_shared::api::{Cause, Workspace, WorkspaceIdentity};
use providers_tests::{
    User, binaries,
    installer::{self, ControllerOptions, Environment, Options, has_condition, status_of},
    plugin::{self, Run},
    system::{self, publish},
    webhook::{KEYS_CONFIGMAP, SYSTEM_NAMESPACE, Webhook},
};

const ORG: &str = "org-a";

/// The key ID that sealed a Workspace's current plan.
fn key_of(ws: &Workspace) -> String {
    ws.spec
        .plan
        .as_ref()
        .map(|p| p.seal.key_id.clone())
        .unwrap_or_default()
}

/// The Job name of attempt `attempt` of `org-a/name`, whose release is `name` (each
/// Workspace here has a Recipe of its own name, so they never share a release namespace).
fn job(name: &str, attempt: i64) -> String {
    let identity = WorkspaceIdentity {
        namespace: ORG.into(),
        name: name.into(),
        uid: String::new(),
    };
    providers_shared::plan::job_name(&identity, name, attempt)
}

/// The release namespace of `org-a/name`.
fn release_namespace(name: &str) -> String {
    format!("{ORG}-{name}")
}

/// Waits until the edge holds the Job, made by the installer but not started.
async fn held(env: &Environment, name: &str, attempt: i64) -> anyhow::Result<()> {
    let (namespace, job) = (release_namespace(name), job(name, attempt));
    installer::eventually(
        &format!("the Job {job} on the edge"),
        Duration::from_secs(90),
        || async { Ok(env.runner.is_held(&namespace, &job).then_some(())) },
    )
    .await
}

/// Fails the held Job of `name`'s attempt and waits until the installer records the failure.
async fn fail(env: &Environment, hub: &Client, name: &str, attempt: i64) -> anyhow::Result<()> {
    held(env, name, attempt).await?;
    let edge = env.edge_admin().await?;
    installer::fail_job(&edge, &release_namespace(name), &job(name, attempt)).await?;
    installer::wait_workspace(hub, ORG, name, &format!("attempt {attempt} failed"), |ws| {
        status_of(ws).attempt == Some(attempt) && has_condition(ws, "Failed", "True", "JobFailed")
    })
    .await?;
    Ok(())
}

/// The lines of a table, each cell separated by one space.
fn rows(table: &str) -> Vec<String> {
    table
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// A shell running the runbook's commands as the platform's operator: in `dir` (where the
/// runbook's files are), with `providers-webhook` and kubectl on PATH and the hub's admin
/// kubeconfig.
async fn runbook(dir: &Path, kubeconfig: &Path, script: &str) -> anyhow::Result<String> {
    let (dir, kubeconfig, script) = (dir.to_owned(), kubeconfig.to_owned(), script.to_owned());
    tokio::task::spawn_blocking(move || run_runbook(&dir, &kubeconfig, &script)).await?
}

fn run_runbook(dir: &Path, kubeconfig: &Path, script: &str) -> anyhow::Result<String> {
    let mut path = vec![
        binaries::cargo_bin("providers-webhook")?
            .parent()
            .context("the binaries' folder")?
            .to_path_buf(),
    ];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .env("PATH", std::env::join_paths(path)?)
        .env("KUBECONFIG", kubeconfig)
        .output()?;
    if !out.status.success() {
        bail!(
            "the runbook's commands failed:\n{script}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `kubectl provider ARGS` as the user of `kubeconfig`, off the test's runtime: a Job the
/// test releases runs on it, and the job runner's shared edge client may then drive a
/// connection there, which a runtime blocked on kubectl would stall.
async fn provider(kubeconfig: &Path, args: &[&str]) -> anyhow::Result<Run> {
    let kubeconfig = kubeconfig.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        plugin::run(&kubeconfig, &args)
    })
    .await?
}

/// Step 2 of the runbook for the webhook: restarted with `private_key` and the keys the
/// ConfigMap publishes (off the test's runtime, as [`provider`]).
async fn restart(
    mut webhook: Webhook,
    private_key: &Path,
    published: Vec<(String, String)>,
) -> anyhow::Result<Webhook> {
    let private_key = private_key.to_owned();
    tokio::task::spawn_blocking(move || {
        webhook.restart_with_sealing_key(&private_key, &published)?;
        Ok(webhook)
    })
    .await?
}

/// The ConfigMap's entries: what the kubelet mounts at the webhook's `--public-keys-dir`.
async fn published(hub: &Client) -> anyhow::Result<Vec<(String, String)>> {
    let map = Api::<ConfigMap>::namespaced(hub.clone(), SYSTEM_NAMESPACE)
        .get(KEYS_CONFIGMAP)
        .await?;
    Ok(map.data.unwrap_or_default().into_iter().collect())
}

/// The private key the webhook's Pod mounts from the Secret `providers-sealing-key`,
/// written to `dir`.
async fn mounted_sealing_key(hub: &Client, dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    let secret = Api::<Secret>::namespaced(hub.clone(), SYSTEM_NAMESPACE)
        .get("providers-sealing-key")
        .await?;
    let pem = secret
        .data
        .unwrap_or_default()
        .remove("sealing.pem")
        .context("the Secret's sealing.pem")?;
    let file = dir.join("mounted-sealing.pem");
    std::fs::write(&file, pem.0)?;
    Ok(file)
}

/// The plugin's writes and what became of them: a retry refused after the rotation is what
/// the rotation must never cause.
#[derive(Default)]
struct Writes {
    refused: Vec<String>,
    admitted: usize,
}

impl Writes {
    /// `kubectl provider ARGS` as alice; counts it, and fails on a refusal or a failed
    /// `--wait`, saying what the system shows of the Workspace `ARGS[1]`.
    async fn alice(&mut self, env: &Environment, args: &[&str]) -> anyhow::Result<Run> {
        let run = provider(env.hub.kubeconfig(User::Alice), args).await?;
        if run.code == 0 {
            self.admitted += 1;
            return Ok(run);
        }
        let seen = diagnose(env, args.get(1).copied().unwrap_or_default()).await;
        self.refused
            .push(format!("{args:?}: {}{}", run.stdout, run.stderr));
        bail!(
            "kubectl provider {args:?} exited {}:\n{}{}\n{seen}",
            run.code,
            run.stdout,
            run.stderr
        )
    }
}

/// What the system shows of `org-a/name`: its status, its Jobs on the edge and what the
/// job runner did with them.
async fn diagnose(env: &Environment, name: &str) -> String {
    let mut out = String::new();
    if let Ok(hub) = env.hub_admin().await
        && let Ok(ws) = installer::workspace(&hub, ORG, name).await
    {
        out.push_str(&format!(
            "status: {}\n",
            serde_json::to_string_pretty(&ws.status).unwrap_or_default()
        ));
    }
    let namespace = release_namespace(name);
    if let Ok(edge) = env.edge_admin().await
        && let Ok(jobs) = Api::<Job>::namespaced(edge, &namespace)
            .list(&Default::default())
            .await
    {
        for job in jobs.items {
            let job_name = job.metadata.name.clone().unwrap_or_default();
            out.push_str(&format!(
                "Job {job_name}: {}; runner: {:?}\n",
                serde_json::to_string(&job.status).unwrap_or_default(),
                env.runner.run(&namespace, &job_name)
            ));
        }
    }
    out
}

#[tokio::test]
async fn the_sealing_key_rotates_under_attempts_in_flight_and_retires_once_no_plan_uses_it()
-> anyhow::Result<()> {
    let env = installer::environment(
        Path::new(env!("CARGO_BIN_EXE_providers-controlplane")),
        Options::default(),
    )
    .await?;
    let hub = env.hub_admin().await?;
    let admin = env.hub.kubeconfig(User::Admin);
    let platform = env.hub.kubeconfig(User::PlatformAdmin);
    let (hub_info, url) = (env.hub.clone(), env.repo.url.clone());
    let mut webhook =
        tokio::task::spawn_blocking(move || Webhook::start(&hub_info, &[url.as_str()])).await??;
    webhook.register(&env.hub).await?;
    // Only the newest succeeded attempt keeps its plan, so a replaced plan leaves soon.
    let _controller = env
        .controller(ControllerOptions {
            args: vec!["--rollback-history".into(), "1".into()],
            ..ControllerOptions::new("", "rotation-0", "lease-rotation").supervised()
        })
        .await?;

    // The install as docs/operations.md has it: the ConfigMap created by `kubectl create`
    // from the operator's files `key-id` and `sealing.pub`.
    let ops = tempfile::Builder::new().prefix("operator-").tempdir()?;
    let old = webhook.key_id.clone();
    std::fs::write(ops.path().join("key-id"), format!("{old}\n"))?;
    std::fs::write(ops.path().join("sealing.pub"), &webhook.public_key_pem)?;
    runbook(
        ops.path(),
        admin,
        "kubectl -n providers-system delete configmap providers-sealing-keys
         kubectl -n providers-system create configmap providers-sealing-keys --from-file=\"$(cat key-id).pem=sealing.pub\"",
    ).await?;

    let names = [
        "kr-done",
        "kr-run-1",
        "kr-run-2",
        "kr-fail-1",
        "kr-fail-2",
        "kr-new",
        "kr-late",
    ];
    for name in names {
        publish(env, name, "hello", &["0.1.0", "0.2.0"]).await?;
    }
    let mut writes = Writes::default();
    let install = |name: &'static str, wait: bool| {
        let mut args = vec![
            "install",
            name,
            "--recipe",
            name,
            "--edge",
            installer::EDGE,
            "--set",
            "greeting=old",
        ];
        if wait {
            args.extend(["--wait", "--timeout", "3m"]);
        }
        args
    };

    // Before the rotation, with the old key: one installed, two failed, two in flight.
    writes.alice(env, &install("kr-done", true)).await?;
    system::installed(&hub, "kr-done", 1).await?;
    for name in ["kr-fail-1", "kr-fail-2", "kr-run-1", "kr-run-2"] {
        env.runner.hold(&job(name, 1));
        writes.alice(env, &install(name, false)).await?;
    }
    for name in ["kr-fail-1", "kr-fail-2"] {
        fail(env, &hub, name, 1).await?;
    }
    for name in ["kr-run-1", "kr-run-2"] {
        held(env, name, 1).await?;
    }
    for name in ["kr-done", "kr-run-1", "kr-run-2", "kr-fail-1", "kr-fail-2"] {
        let ws = installer::workspace(&hub, ORG, name).await?;
        ensure!(key_of(&ws) == old, "{name} sealed with {}", key_of(&ws));
    }

    // Step 1: a new pair, its public key published beside the old one.
    runbook(
        ops.path(),
        admin,
        "providers-webhook keygen --private-key sealing-new.pem --public-key sealing-new.pub > key-id-new
         kubectl -n providers-system create configmap providers-sealing-keys \\
           --from-file=\"$(cat key-id).pem=sealing.pub\" --from-file=\"$(cat key-id-new).pem=sealing-new.pub\" \\
           --dry-run=client -o yaml | kubectl apply --server-side --force-conflicts -f -",
    ).await?;
    let new = std::fs::read_to_string(ops.path().join("key-id-new"))?
        .trim()
        .to_owned();
    ensure!(new != old && new.len() == 16, "a new key ID: {new}");
    let keys = published(&hub).await?;
    ensure!(
        keys.len() == 2
            && keys.iter().any(|(k, _)| *k == format!("{old}.pem"))
            && keys.iter().any(|(k, _)| *k == format!("{new}.pem")),
        "both keys published: {:?}",
        keys.iter().map(|(k, _)| k).collect::<Vec<_>>()
    );

    // Step 2: the Secret holds the new private key; the webhook restarts with it, mounting
    // the Secret and the ConfigMap as its Pod does.
    runbook(
        ops.path(),
        admin,
        "kubectl -n providers-system create secret generic providers-sealing-key \\
           --from-file=sealing.pem=sealing-new.pem --dry-run=client -o yaml \\
           | kubectl apply --server-side --force-conflicts -f -
         rm sealing-new.pem",
    )
    .await?;
    let private_key = mounted_sealing_key(&hub, ops.path()).await?;
    webhook = restart(webhook, &private_key, published(&hub).await?).await?;
    webhook.register(&env.hub).await?;
    ensure!(
        webhook.key_id == new,
        "the webhook seals with {}",
        webhook.key_id
    );

    // A new attempt carries the new key ID, and the installer runs it.
    writes.alice(env, &install("kr-new", true)).await?;
    let ws = system::installed(&hub, "kr-new", 1).await?;
    ensure!(key_of(&ws) == new, "kr-new sealed with {}", key_of(&ws));

    // The attempts in flight finish with the old key and are recorded.
    for name in ["kr-run-1", "kr-run-2"] {
        env.runner.release(&job(name, 1));
    }
    for name in ["kr-run-1", "kr-run-2"] {
        let ws = system::installed(&hub, name, 1).await?;
        ensure!(key_of(&ws) == old, "{name} ran its old-key plan");
        let record = status_of(&ws)
            .attempts
            .last()
            .cloned()
            .context("a record")?;
        ensure!(
            record.attempt == 1
                && record.kept.as_ref().map(|k| k.plan.seal.key_id.as_str()) == Some(old.as_str()),
            "{name}'s attempt 1 recorded, its old-key plan kept: {record:?}"
        );
    }

    // `plan --verify` verifies a plan of either key.
    for (name, key) in [("kr-run-1", &old), ("kr-new", &new)] {
        let run = provider(env.hub.kubeconfig(User::Alice), &["plan", name, "--verify"]).await?;
        let out = run.ok()?;
        ensure!(
            out.contains(&format!("yes: signed by published key {key}")),
            "{name}:\n{out}"
        );
    }

    // The failed old-key attempts are retried: admitted, sealed with the new key, run.
    for name in ["kr-fail-1", "kr-fail-2"] {
        writes
            .alice(env, &["retry", name, "--wait", "--timeout", "2m"])
            .await?;
        let ws = system::installed(&hub, name, 2).await?;
        ensure!(
            key_of(&ws) == new,
            "{name}'s retry sealed with {}",
            key_of(&ws)
        );
        ensure!(
            ws.spec.plan.as_ref().and_then(|p| p.plan.cause) == Some(Cause::Retry),
            "{name} attempt 2 is a retry"
        );
    }

    // The old key seals current and kept plans: its retirement is refused.
    let table = provider(platform, &["keys", "-A"]).await?;
    let listed = rows(table.ok()?);
    for row in [
        "KEY ID WORKSPACES KEPT PUBLISHED".to_owned(),
        format!("{old} 3 3 yes"),
        format!("{new} 3 3 yes"),
    ] {
        ensure!(listed.contains(&row), "{row:?} in:\n{}", table.stdout);
    }
    let gate = provider(platform, &["keys", "-A", "--in-use", &old]).await?;
    let said = gate.failed()?;
    ensure!(
        said.contains(&format!(
            "error: key {old} still seals 6 live plans in any namespace (3 current Succeeded, 3 kept for rollback)"
        )),
        "{said}"
    );
    ensure!(
        rows(&gate.stdout).contains(&"org-a kr-run-1 1 current Succeeded".to_owned())
            && rows(&gate.stdout).contains(&"org-a kr-done 1 kept Succeeded".to_owned()),
        "{}",
        gate.stdout
    );

    // The old-key plans are replaced: changed intents run new attempts.
    for name in ["kr-run-1", "kr-run-2"] {
        writes
            .alice(
                env,
                &[
                    "set",
                    name,
                    "--set",
                    "greeting=new",
                    "--wait",
                    "--timeout",
                    "3m",
                ],
            )
            .await?;
        ensure!(key_of(&system::installed(&hub, name, 2).await?) == new);
    }
    // kr-done's change fails: its current plan has the new key, its kept one the old.
    env.runner.hold(&job("kr-done", 2));
    writes
        .alice(env, &["set", "kr-done", "--set", "greeting=new"])
        .await?;
    fail(env, &hub, "kr-done", 2).await?;
    let gate = provider(platform, &["keys", "-A", "--in-use", &old]).await?;
    let said = gate.failed()?;
    ensure!(
        said.contains("still seals 1 live plan in any namespace (1 kept for rollback)"),
        "a kept plan holds the key: {said}"
    );
    ensure!(
        rows(&gate.stdout)
            == [
                "NAMESPACE NAME ATTEMPT PLAN PHASE",
                "org-a kr-done 1 kept Succeeded"
            ],
        "{}",
        gate.stdout
    );
    // A rollback to it is admitted and sealed with the new key.
    writes
        .alice(env, &["rollback", "kr-done", "--wait", "--timeout", "3m"])
        .await?;
    let ws = system::installed(&hub, "kr-done", 3).await?;
    let plan = &ws.spec.plan.as_ref().context("a plan")?.plan;
    ensure!(
        key_of(&ws) == new && plan.cause == Some(Cause::Rollback) && plan.restores == Some(1),
        "kr-done attempt 3 restores attempt 1 with the new key: {:?} {:?} {}",
        plan.cause,
        plan.restores,
        key_of(&ws)
    );

    // No live plan uses the old key any more: the gate opens.
    let gate = provider(platform, &["keys", "-A", "--in-use", &old]).await?;
    ensure!(gate.ok()?.is_empty(), "{}", gate.stdout);
    ensure!(
        gate.stderr.contains(&format!(
            "No live plan in any namespace is sealed with key {old}: it may leave"
        )),
        "{}",
        gate.stderr
    );
    let listed = rows(provider(platform, &["keys", "-A"]).await?.ok()?);
    ensure!(
        listed.contains(&format!("{old} 0 0 yes")) && listed.contains(&format!("{new} 6 6 yes")),
        "{listed:?}"
    );

    // An apply of the ConfigMap without the old key does not retire it: the entry the
    // install's `kubectl create` wrote is still that field manager's. Hence the patch below.
    runbook(
        ops.path(),
        admin,
        "kubectl -n providers-system create configmap providers-sealing-keys \\
           --from-file=\"$(cat key-id-new).pem=sealing-new.pub\" \\
           --dry-run=client -o yaml | kubectl apply --server-side --force-conflicts -f -",
    )
    .await?;
    let keys = published(&hub).await?;
    ensure!(
        keys.iter().any(|(k, _)| *k == format!("{old}.pem")),
        "an apply without the old key removed it after all: {keys:?}"
    );

    // Step 3: the old key leaves the ConfigMap, and the webhook is restarted without it.
    runbook(
        ops.path(),
        admin,
        "kubectl -n providers-system patch configmap providers-sealing-keys --type=json \\
           -p \"[{\\\"op\\\": \\\"remove\\\", \\\"path\\\": \\\"/data/$(cat key-id).pem\\\"}]\"
         mv key-id-new key-id && mv sealing-new.pub sealing.pub",
    )
    .await?;
    let keys = published(&hub).await?;
    ensure!(
        keys.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>() == [format!("{new}.pem")],
        "only the new key is published: {keys:?}"
    );
    webhook = restart(webhook, &private_key, keys).await?;
    webhook.register(&env.hub).await?;
    let listed = rows(provider(platform, &["keys", "-A"]).await?.ok()?);
    ensure!(
        listed
            == [
                "KEY ID WORKSPACES KEPT PUBLISHED".to_owned(),
                format!("{new} 6 6 yes")
            ],
        "{listed:?}"
    );

    // New writes and installs still work, and verify.
    writes.alice(env, &install("kr-late", true)).await?;
    let ws = system::installed(&hub, "kr-late", 1).await?;
    ensure!(key_of(&ws) == new);
    writes
        .alice(
            env,
            &[
                "set",
                "kr-new",
                "--set",
                "greeting=after",
                "--wait",
                "--timeout",
                "3m",
            ],
        )
        .await?;
    ensure!(key_of(&system::installed(&hub, "kr-new", 2).await?) == new);
    provider(
        env.hub.kubeconfig(User::Alice),
        &["plan", "kr-late", "--verify"],
    )
    .await?
    .ok()?;

    ensure!(
        writes.refused.is_empty(),
        "writes refused: {:#?}",
        writes.refused
    );
    ensure!(writes.admitted == 14, "{} writes admitted", writes.admitted);
    Ok(())
}
