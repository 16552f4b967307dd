//! Day two through the whole system (the real webhook and installer on a hub, an edge whose
//! Jobs run the real helm, alice using `kubectl provider`):
//!
//! - an out-of-band `helm upgrade` and a `helm uninstall` on the edge are reported as
//!   drift (the Drifted condition, Ready=False) and repaired by a new attempt of the same
//!   sealed plan;
//! - a rollback seals an earlier succeeded attempt's plan again and restores its version
//!   and values; a version the platform has withdrawn is refused with that reason;
//! - under `drift.repair: Automatic`, drift is repaired once for the plan's owner, and
//!   drift again within the quiet period stops it.

use std::{path::Path, process::Command, time::Duration};

use anyhow::{Context, bail, ensure};
use k8s_openapi::api::{apps::v1::Deployment, batch::v1::Job, core::v1::ConfigMap};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, Patch, PatchParams},
};
use providers_shared::api::{Cause, Recipe, Workspace};
use providers_tests::{
    User, binaries, engines,
    installer::{self, has_condition, status_of, wait_workspace},
    plugin,
    system::{self, System, publish, publish_with_defaults},
};
use serde_json::json;

/// How often the installer compares an installed release's objects with its manifest
/// here: often enough that an edit only contents show is seen within seconds.
const CONTENT_CHECK_SECONDS: &str = "3";

async fn system() -> anyhow::Result<&'static System> {
    system::shared_with(
        Path::new(env!("CARGO_BIN_EXE_providers-controlplane")),
        &["--drift-content-interval", CONTENT_CHECK_SECONDS],
    )
    .await
}

/// The hello chart's ConfigMap on the edge: `(greeting, chartVersion)`.
async fn rendered(
    edge: &Client,
    namespace: &str,
    release: &str,
) -> anyhow::Result<Option<(String, String)>> {
    Ok(Api::<ConfigMap>::namespaced(edge.clone(), namespace)
        .get_opt(&format!("{release}-greeting"))
        .await?
        .and_then(|c| {
            let data = c.data?;
            Some((
                data.get("greeting")?.clone(),
                data.get("chartVersion")?.clone(),
            ))
        }))
}

/// Runs helm against the edge as its admin, as someone working by hand on the edge would.
fn helm_on_edge(kubeconfig: &Path, args: &[&str]) -> anyhow::Result<String> {
    let home = tempfile::tempdir()?;
    let out = Command::new(binaries::path("helm")?)
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("HELM_CACHE_HOME", home.path().join("cache"))
        .env("HELM_CONFIG_HOME", home.path().join("config"))
        .env("HELM_DATA_HOME", home.path().join("data"))
        .output()
        .context("running helm")?;
    if !out.status.success() {
        bail!("helm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `kubectl provider install NAME --recipe RECIPE --set greeting=GREETING --wait` as the
/// user of `kubeconfig`, onto the test edge.
fn install_with_greeting(
    kubeconfig: &Path,
    name: &str,
    recipe: &str,
    greeting: &str,
) -> anyhow::Result<()> {
    let greeting = format!("greeting={greeting}");
    plugin::run(
        kubeconfig,
        &[
            "install",
            name,
            "--recipe",
            recipe,
            "--edge",
            installer::EDGE,
            "--set",
            &greeting,
            "--wait",
            "--timeout",
            "3m",
        ],
    )?
    .ok()?;
    Ok(())
}

/// How long a write that is not drift must leave a Workspace in sync. A hand edit that is
/// drift reaches the status within a second or two in this suite (every `drifted` wait
/// above and below shows it), so five seconds, checked all along, would see one.
const QUIET: Duration = Duration::from_secs(5);

/// Fails as soon as `name` is reported drifted within [`QUIET`]; the Workspace at its end.
async fn stays_in_sync(hub: &Client, name: &str, why: &str) -> anyhow::Result<Workspace> {
    let until = std::time::Instant::now() + QUIET;
    loop {
        let ws = installer::workspace(hub, "org-a", name).await?;
        ensure!(
            has_condition(&ws, "Drifted", "False", "ReleaseInSync"),
            "{why}: {:?}",
            status_of(&ws).drift
        );
        if std::time::Instant::now() >= until {
            return Ok(ws);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn drifted(hub: &Client, name: &str, reason: &str) -> anyhow::Result<Workspace> {
    wait_workspace(hub, "org-a", name, &format!("drift {reason}"), |ws| {
        has_condition(ws, "Drifted", "True", reason) && has_condition(ws, "Ready", "False", reason)
    })
    .await
}

/// Drift is reported, never corrected behind anyone's back: a release changed or removed by
/// hand on the edge is reported, never corrected behind anyone's back, and `kubectl
/// provider repair` installs the sealed plan again.
#[tokio::test]
async fn drift_on_the_edge_is_reported_and_repaired() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "drift-hello", "hello", &["0.1.0", "0.2.0"]).await?;
    let (hub, edge) = (env.hub_admin().await?, env.edge_admin().await?);
    let alice = env.hub.kubeconfig(User::Alice);
    let edge_admin = env.edge.kubeconfig(User::Admin);
    let (namespace, release) = ("org-a-drift-hello", "drift-hello");
    install_with_greeting(alice, "drifty", "drift-hello", "sealed")?;
    let ws = system::installed(&hub, "drifty", 1).await?;
    let left = status_of(&ws)
        .release
        .context("the revision attempt 1 left")?;
    ensure!(left.name == release && left.revision == 1, "{left:?}");

    // Someone upgrades the release by hand: another version and other values.
    let chart = format!("{}/hello-0.2.0.tgz", env.repo.url);
    helm_on_edge(
        edge_admin,
        &[
            "upgrade",
            release,
            &chart,
            "-n",
            namespace,
            "--set",
            "greeting=by-hand",
        ],
    )?;
    let ws = drifted(&hub, "drifty", "ReleaseChanged").await?;
    let drift = status_of(&ws).drift.context("status.drift")?;
    for words in [
        "revision 2 (deployed), made outside the installer after revision 1",
        "chart hello 0.2.0, the plan pins hello 0.1.0",
        "values differ from the plan's at greeting",
        "kubectl provider repair drifty",
    ] {
        ensure!(
            drift.message.contains(words),
            "{words:?} in {}",
            drift.message
        );
    }
    ensure!(
        has_condition(&ws, "Stalled", "True", "ReleaseChanged"),
        "kstatus reads it as failed"
    );
    // The GitOps engines, through their own code, read drift as a failure.
    let object = serde_json::to_value(
        Api::<DynamicObject>::namespaced_with(
            hub.clone(),
            "org-a",
            &ApiResource::erase::<Workspace>(&()),
        )
        .get("drifty")
        .await?,
    )?;
    let kstatus = engines::kstatus(&object).await?;
    ensure!(
        kstatus.cli_utils.status == "Failed" && kstatus.flux.status == "Failed",
        "kstatus: {kstatus:?}"
    );
    let script = tempfile::Builder::new().suffix(".lua").tempfile()?;
    std::fs::write(script.path(), engines::argocd_health_script_from_docs()?)?;
    let health = engines::argocd_health(script.path(), &object).await?;
    ensure!(health.status == "Degraded", "Argo CD: {health:?}");
    let reasons = installer::event_reasons(&hub, &ws).await?;
    ensure!(reasons.iter().any(|r| r == "ReleaseDrifted"), "{reasons:?}");
    let status = plugin::run(alice, &["status", "drifty"])?;
    ensure!(
        status.ok()?.contains("made outside the installer"),
        "{status:?}"
    );
    // Nothing was corrected behind anyone's back.
    ensure!(
        rendered(&edge, namespace, release).await? == Some(("by-hand".into(), "0.2.0".into())),
        "the hand-made revision stays until someone repairs it"
    );

    let repaired = plugin::run(alice, &["repair", "drifty", "--wait", "--timeout", "3m"])?;
    ensure!(
        repaired.ok()?.contains("repaired (attempt 2 sealed)"),
        "{repaired:?}"
    );
    let ws = system::installed(&hub, "drifty", 2).await?;
    let plan = ws.spec.plan.context("sealed")?.plan;
    ensure!(plan.cause == Some(Cause::Repair) && plan.version == "0.1.0");
    ensure!(
        rendered(&edge, namespace, release).await? == Some(("sealed".into(), "0.1.0".into())),
        "the sealed plan is back"
    );

    // Someone uninstalls it by hand.
    helm_on_edge(edge_admin, &["uninstall", release, "-n", namespace])?;
    let ws = drifted(&hub, "drifty", "ReleaseMissing").await?;
    ensure!(
        status_of(&ws)
            .drift
            .context("drift")?
            .message
            .contains("uninstalled outside the installer"),
        "{:?}",
        status_of(&ws).drift
    );
    // A retry says the same as a repair while drifted.
    plugin::run(alice, &["retry", "drifty", "--wait", "--timeout", "3m"])?.ok()?;
    system::installed(&hub, "drifty", 3).await?;
    ensure!(
        rendered(&edge, namespace, release).await?.is_some(),
        "reinstalled"
    );
    let history = plugin::run(alice, &["history", "drifty"])?;
    let history = history.ok()?;
    ensure!(
        history.lines().filter(|l| l.contains("Repair")).count() == 2,
        "the history says why each attempt ran:\n{history}"
    );
    Ok(())
}

/// A rollback is a new attempt of an earlier succeeded plan: a rollback seals an earlier
/// succeeded attempt's plan again (its version and values), shows in the history as a
/// rollback of that attempt, and a version the platform has withdrawn since is refused with
/// that reason.
#[tokio::test]
async fn a_rollback_restores_the_last_good_plan() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "rollback-hello", "hello", &["0.1.0", "0.2.0"]).await?;
    let (hub, edge) = (env.hub_admin().await?, env.edge_admin().await?);
    let alice = env.hub.kubeconfig(User::Alice);
    let (namespace, release) = ("org-a-rollback-hello", "rollback-hello");
    plugin::run(
        alice,
        &[
            "install",
            "rolling",
            "--recipe",
            "rollback-hello",
            "--edge",
            installer::EDGE,
            "--version",
            "0.1.0",
            "--set",
            "greeting=first",
            "--wait",
            "--timeout",
            "3m",
        ],
    )?
    .ok()?;
    system::installed(&hub, "rolling", 1).await?;
    plugin::run(
        alice,
        &[
            "set",
            "rolling",
            "--version",
            "0.2.0",
            "--set",
            "greeting=second",
            "--wait",
            "--timeout",
            "3m",
        ],
    )?
    .ok()?;
    system::installed(&hub, "rolling", 2).await?;
    ensure!(rendered(&edge, namespace, release).await? == Some(("second".into(), "0.2.0".into())));

    // The annotation alone (a metadata-only write) asks for nothing and is not stored.
    let annotated = providers_tests::kubectl::run(
        alice,
        &[
            "annotate",
            "workspace",
            "rolling",
            "-n",
            "org-a",
            "providers.platform.dev/rollback-to=1",
        ],
    )?;
    let stderr = String::from_utf8_lossy(&annotated.stderr);
    ensure!(
        !annotated.status.success() && stderr.contains("raising spec.retry in the same write"),
        "{stderr}"
    );
    let rolled = plugin::run(alice, &["rollback", "rolling", "--wait", "--timeout", "3m"])?;
    ensure!(
        rolled
            .ok()?
            .contains("rolled back to attempt 1 (attempt 3 sealed)"),
        "{rolled:?}"
    );
    let ws = system::installed(&hub, "rolling", 3).await?;
    let plan = ws.spec.plan.clone().context("sealed")?.plan;
    ensure!(
        plan.cause == Some(Cause::Rollback) && plan.restores == Some(1),
        "{plan:?}"
    );
    ensure!(
        ws.spec.version.as_deref() == Some("0.1.0")
            && ws.spec.values == Some(json!({"greeting": "first"})),
        "the intent is back to attempt 1's: {:?}",
        ws.spec
    );
    ensure!(
        rendered(&edge, namespace, release).await? == Some(("first".into(), "0.1.0".into())),
        "attempt 1's version and values are installed again"
    );
    let history = plugin::run(alice, &["history", "rolling"])?;
    ensure!(history.ok()?.contains("Rollback to 1"), "{history:?}");

    // The platform withdraws 0.2.0: rolling back to attempt 2 is refused, with the reason.
    publish(env, "rollback-hello", "hello", &["0.1.0"]).await?;
    let refused = plugin::run(alice, &["rollback", "rolling", "--to-attempt", "2"])?;
    ensure!(refused.code != 0, "refused: {refused:?}");
    ensure!(
        refused
            .stderr
            .contains("the plan of attempt 2 cannot be rolled back to")
            && refused
                .stderr
                .contains("no longer offers version \"0.2.0\""),
        "{}",
        refused.stderr
    );
    // An attempt whose plan was never kept cannot be named.
    let unknown = plugin::run(alice, &["rollback", "rolling", "--to-attempt", "9"])?;
    ensure!(
        unknown.code != 0 && unknown.stderr.contains("no kept plan"),
        "{unknown:?}"
    );
    // No wait: only a write through the webhook seals, and the refused command's write,
    // if it made one, was answered before it returned.
    let ws = installer::workspace(&hub, "org-a", "rolling").await?;
    ensure!(
        ws.spec.plan.context("sealed")?.plan.attempt == 3,
        "nothing new was sealed"
    );
    Ok(())
}

/// Rule `values_reach_helm_unchanged`: a string value holding characters YAML reads as line
/// breaks (U+2028, U+2029, U+0085) reaches the Workspace exactly as the user wrote it (the
/// plugin's apply body is read as YAML), and helm installs it from the values file and
/// stores those very values: drift, which compares them with the plan, finds the release in
/// sync.
#[tokio::test]
async fn values_yaml_would_misread_reach_the_release_unchanged() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "yaml-hello", "hello", &["0.1.0"]).await?;
    let hub = env.hub_admin().await?;
    let greeting = "h\u{e9}\u{2028}l\u{85}l\u{2029}o";
    install_with_greeting(
        env.hub.kubeconfig(User::Alice),
        "yaml-safe",
        "yaml-hello",
        greeting,
    )?;
    let ws = system::installed(&hub, "yaml-safe", 1).await?;
    ensure!(
        ws.spec.values == Some(json!({"greeting": greeting})),
        "{:?}",
        ws.spec.values
    );
    // Helm's own YAML reading of the rendered greeting is not ours (it stores U+0085 as a
    // space): the content check after the attempt takes what helm stored as the release's
    // baseline, not as drift.
    let ws = wait_workspace(&hub, "org-a", "yaml-safe", "a content baseline", |ws| {
        status_of(ws)
            .release
            .is_some_and(|r| r.content_baseline.is_some())
    })
    .await?;
    let baseline = status_of(&ws)
        .release
        .and_then(|r| r.content_baseline)
        .unwrap_or_default();
    ensure!(
        baseline
            .iter()
            .any(|b| b.field == "data.greeting" && b.digest.is_some()),
        "{baseline:?}"
    );
    ensure!(has_condition(&ws, "Drifted", "False", "ReleaseInSync"));
    Ok(())
}

/// An object of a release, deleted on the edge by hand.
struct Deleted<'a> {
    namespace: &'a str,
    kind: &'a str,
    name: &'a str,
}

/// Deletes `deleted` on the edge as its admin, waits until `workspace` reports it gone
/// (`ObjectDeleted`, naming it), and repairs until `attempt` is installed.
async fn deleted_is_drift_and_repaired(
    hub: &Client,
    alice: &Path,
    edge_admin: &Path,
    workspace: &str,
    deleted: Deleted<'_>,
    attempt: i64,
) -> anyhow::Result<()> {
    let Deleted {
        namespace,
        kind,
        name,
    } = deleted;
    providers_tests::kubectl::ok(
        edge_admin,
        &["-n", namespace, "delete", &kind.to_lowercase(), name],
    )?;
    let ws = drifted(hub, workspace, "ObjectDeleted").await?;
    let drift = status_of(&ws).drift.context("status.drift")?;
    ensure!(
        drift
            .message
            .contains(&format!("{kind} {namespace}/{name} is gone")),
        "{}",
        drift.message
    );
    plugin::run(alice, &["repair", workspace, "--wait", "--timeout", "3m"])?.ok()?;
    system::installed(hub, workspace, attempt).await?;
    Ok(())
}

/// A hand edit of an object the chart made (`kubectl patch` of its ConfigMap on the edge)
/// and a deletion of one are drift, named with the object, the field manager and the
/// fields, read from the objects' metadata only; an object annotated to opt out is not;
/// `kubectl provider repair` puts the field and the object back.
#[tokio::test]
async fn a_hand_edit_or_deletion_of_a_release_object_is_drift_and_repair_restores_it()
-> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "edit-hello", "hello", &["0.1.0"]).await?;
    let (hub, edge) = (env.hub_admin().await?, env.edge_admin().await?);
    let alice = env.hub.kubeconfig(User::Alice);
    let edge_admin = env.edge.kubeconfig(User::Admin);
    let (namespace, release) = ("org-a-edit-hello", "edit-hello");
    let configmap = format!("{release}-greeting");
    install_with_greeting(alice, "edited", "edit-hello", "sealed")?;
    system::installed(&hub, "edited", 1).await?;

    // A hand edit of the chart's ConfigMap on the edge.
    let edited = std::time::Instant::now();
    providers_tests::kubectl::ok(
        edge_admin,
        &[
            "-n",
            namespace,
            "patch",
            "configmap",
            &configmap,
            "--type=merge",
            "-p",
            r#"{"data":{"greeting":"by-hand"}}"#,
        ],
    )?;
    let ws = drifted(&hub, "edited", "ObjectChanged").await?;
    let seen_after = edited.elapsed();
    let drift = status_of(&ws).drift.context("status.drift")?;
    ensure!(
        seen_after < Duration::from_secs(10),
        "seen after {seen_after:?}"
    );
    let object = drift.objects.first().context("the drifted object")?;
    ensure!(
        object.kind == "ConfigMap"
            && object.name == configmap
            && object.namespace == namespace
            && object.change == "Changed"
            && object.manager.as_deref() == Some("kubectl-patch")
            && object.fields.iter().any(|f| f == "data.greeting"),
        "{object:?}"
    );
    for words in [
        format!("ConfigMap {namespace}/{configmap} was changed by kubectl-patch (data.greeting)"),
        "kubectl provider repair edited".to_owned(),
    ] {
        ensure!(
            drift.message.contains(&words),
            "{words:?} in {}",
            drift.message
        );
    }
    let reasons = installer::event_reasons(&hub, &ws).await?;
    ensure!(reasons.iter().any(|r| r == "ReleaseDrifted"), "{reasons:?}");
    ensure!(
        rendered(&edge, namespace, release).await?.map(|r| r.0) == Some("by-hand".into()),
        "nothing is corrected behind anyone's back"
    );

    // Repair takes the field back.
    plugin::run(alice, &["repair", "edited", "--wait", "--timeout", "3m"])?.ok()?;
    system::installed(&hub, "edited", 2).await?;
    ensure!(
        rendered(&edge, namespace, release).await?.map(|r| r.0) == Some("sealed".into()),
        "the sealed value is back"
    );

    // A deletion of the chart's object.
    let deleted = Deleted {
        namespace,
        kind: "ConfigMap",
        name: &configmap,
    };
    deleted_is_drift_and_repaired(&hub, alice, edge_admin, "edited", deleted, 3).await?;
    ensure!(
        rendered(&edge, namespace, release).await?.map(|r| r.0) == Some("sealed".into()),
        "the deleted object is back"
    );

    // An object annotated on the edge to opt out is not reported from its field managers,
    // but anyone who may write it may annotate it in the same write: its contents are
    // still compared with the manifest, where only the chart's own annotation counts.
    providers_tests::kubectl::ok(
        edge_admin,
        &[
            "-n",
            namespace,
            "annotate",
            "configmap",
            &configmap,
            "providers.platform.dev/drift=ignore",
        ],
    )?;
    providers_tests::kubectl::ok(
        edge_admin,
        &[
            "-n",
            namespace,
            "patch",
            "configmap",
            &configmap,
            "--type=merge",
            "-p",
            r#"{"data":{"greeting":"tolerated"}}"#,
        ],
    )?;
    drifted_by_contents(&hub, "edited", &configmap, "data.greeting").await?;
    Ok(())
}

/// Waits until `workspace` is drifted with its object `object` found by its contents (a
/// report from field managers may come first, and is replaced once they no longer show
/// the edit); the Workspace then.
async fn drifted_by_contents(
    hub: &Client,
    workspace: &str,
    object: &str,
    field: &str,
) -> anyhow::Result<Workspace> {
    let what = format!("{object} drifted by contents");
    let ws = wait_workspace(hub, "org-a", workspace, &what, |ws| {
        has_condition(ws, "Drifted", "True", "ObjectChanged")
            && found_by_contents(ws, object, field).is_ok()
    })
    .await?;
    found_by_contents(&ws, object, field)?;
    Ok(ws)
}

/// The object `name` of `ws`'s drift was found by comparing its contents, not from its
/// field managers (none is named), and `field` is among the fields named.
fn found_by_contents(ws: &Workspace, name: &str, field: &str) -> anyhow::Result<()> {
    let drift = status_of(ws).drift.context("status.drift")?;
    let object = drift
        .objects
        .iter()
        .find(|o| o.name == name)
        .with_context(|| format!("{name} among the drifted objects: {:?}", drift.objects))?;
    ensure!(
        object.found_by.as_deref() == Some("Contents")
            && object.manager.is_none()
            && object.change == "Changed"
            && object.fields.iter().any(|f| f == field),
        "{object:?}"
    );
    ensure!(
        drift
            .message
            .contains("as a comparison of its contents shows"),
        "{}",
        drift.message
    );
    Ok(())
}

/// The name of the first runner Job of `namespace` that is complete and not in `seen`,
/// polled every 10 ms: the moment an attempt ends, as near as the edge can tell.
async fn next_completed_job(
    jobs: &Api<Job>,
    seen: &mut std::collections::BTreeSet<String>,
) -> anyhow::Result<String> {
    tokio::time::timeout(Duration::from_secs(180), async {
        loop {
            for job in jobs.list(&Default::default()).await?.items {
                let name = job.metadata.name.clone().unwrap_or_default();
                let complete = job
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Complete" && c.status == "True");
                if complete && seen.insert(name.clone()) {
                    return Ok(name);
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .context("no new runner Job completed within 180 s")?
}

/// Order, not whole seconds, says whether an edit came after an attempt: a writer that
/// answers the moment each attempt's Job completes (a controller fighting the chart) is
/// seen every round, in the second the attempt ended too. The install's round is ordered
/// by the second alone (the namespace's watch begins after it) and the repairs' by the
/// edge's versions (the watch was there).
#[tokio::test]
async fn an_edit_in_the_second_an_attempt_ends_is_drift_every_round() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "order-hello", "hello", &["0.1.0"]).await?;
    let (hub, edge) = (env.hub_admin().await?, env.edge_admin().await?);
    let alice = env.hub.kubeconfig(User::Alice);
    let (namespace, release) = ("org-a-order-hello", "order-hello");
    let configmap = format!("{release}-greeting");
    let jobs: Api<Job> = Api::namespaced(edge.clone(), namespace);
    let configmaps: Api<ConfigMap> = Api::namespaced(edge.clone(), namespace);
    let fighter = PatchParams {
        field_manager: Some("fighting-writer".into()),
        ..Default::default()
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut same_second = 0;
    plugin::run(
        alice,
        &[
            "install",
            "ordered",
            "--recipe",
            "order-hello",
            "--edge",
            installer::EDGE,
            "--set",
            "greeting=sealed",
        ],
    )?
    .ok()?;
    for attempt in 1..=4_i64 {
        if attempt > 1 {
            plugin::run(alice, &["repair", "ordered"])?.ok()?;
        }
        next_completed_job(&jobs, &mut seen).await?;
        let patch = json!({"data": {"greeting": format!("fought-{attempt}")}});
        let written = configmaps
            .patch(&configmap, &fighter, &Patch::Merge(&patch))
            .await?;
        let edited_at = written
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .find(|entry| entry.manager.as_deref() == Some("fighting-writer"))
            .and_then(|entry| entry.time.clone())
            .context("the writer's managedFields entry")?;
        let ws = wait_workspace(
            &hub,
            "org-a",
            "ordered",
            &format!("attempt {attempt} installed and the writer's edit named as drift"),
            |ws| {
                let status = status_of(ws);
                status.attempt == Some(attempt)
                    && has_condition(ws, "Drifted", "True", "ObjectChanged")
                    && status.drift.as_ref().is_some_and(|d| {
                        d.objects.iter().any(|o| {
                            o.manager.as_deref() == Some("fighting-writer")
                                && o.changed_at.as_ref() == Some(&edited_at)
                        })
                    })
            },
        )
        .await?;
        let finished = status_of(&ws).finished_at.context("status.finishedAt")?;
        if finished.0.as_second() == edited_at.0.as_second() {
            same_second += 1;
        }
    }
    eprintln!("edits in the second their attempt ended: {same_second} of 4");
    ensure!(
        same_second > 0,
        "no edit fell in its attempt's last second; the rounds proved nothing of it"
    );
    Ok(())
}

/// A kind of the release that the edge does not let the installer list (a LimitRange: the
/// ClusterRole providers-edge-namespace does not name it) is said on the Workspace, with
/// why and what to do, instead of reading as in sync; the kinds it follows still are.
#[tokio::test]
async fn a_kind_the_installer_may_not_list_is_named_on_the_workspace() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish_with_defaults(
        env,
        "limits-hello",
        "hello",
        &["0.1.0"],
        json!({"hub": {"credentialSecret": ""}, "limits": {"enabled": true}}),
    )
    .await?;
    let hub = env.hub_admin().await?;
    Api::<Recipe>::all(hub.clone())
        .patch(
            "limits-hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"execution": [
                installer::rule("", "configmaps"),
                installer::rule("", "limitranges"),
            ]}})),
        )
        .await?;
    let alice = env.hub.kubeconfig(User::Alice);
    install_with_greeting(alice, "limited", "limits-hello", "sealed")?;
    system::installed(&hub, "limited", 1).await?;
    let ws = wait_workspace(
        &hub,
        "org-a",
        "limited",
        "the LimitRange named as not followed",
        |ws| {
            status_of(ws)
                .unfollowed
                .iter()
                .any(|k| k.kind == "LimitRange" && k.reason == "ListRefused")
        },
    )
    .await?;
    let status = status_of(&ws);
    ensure!(
        status.unfollowed.len() == 1 && status.unfollowed[0].objects == 1,
        "only the LimitRange, one object: {:?}",
        status.unfollowed
    );
    ensure!(
        status.unfollowed[0]
            .message
            .contains("ClusterRole providers-edge-namespace"),
        "it says what to do: {}",
        status.unfollowed[0].message
    );
    let reasons = installer::event_reasons(&hub, &ws).await?;
    ensure!(
        reasons.iter().any(|r| r == "KindsNotFollowed"),
        "{reasons:?}"
    );
    // The ConfigMap beside it is followed: its edit is drift.
    let edge_admin = env.edge.kubeconfig(User::Admin);
    providers_tests::kubectl::ok(
        edge_admin,
        &[
            "-n",
            "org-a-limits-hello",
            "patch",
            "configmap",
            "limits-hello-greeting",
            "--type=merge",
            "-p",
            r#"{"data":{"greeting":"by-hand"}}"#,
        ],
    )?;
    drifted(&hub, "limited", "ObjectChanged").await?;
    Ok(())
}

/// A chart's ServiceAccount is followed from the one watch of ServiceAccounts across the
/// edge (ADR 43): a hand edit of it and its deletion are drift, named with the object,
/// the field manager and the field; a Helm-made ServiceAccount of the same release name
/// outside the installer's namespaces is not the release's; repair brings the deleted
/// object back.
#[tokio::test]
async fn a_release_s_service_account_followed_across_the_edge_is_drift_when_edited_or_deleted()
-> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish_with_defaults(
        env,
        "identity-hello",
        "hello",
        &["0.1.0"],
        json!({"hub": {"credentialSecret": ""}, "identity": {"enabled": true}}),
    )
    .await?;
    let hub = env.hub_admin().await?;
    Api::<Recipe>::all(hub.clone())
        .patch(
            "identity-hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"execution": [
                installer::rule("", "configmaps"),
                installer::rule("", "serviceaccounts"),
            ]}})),
        )
        .await?;
    let edge = env.edge_admin().await?;
    let alice = env.hub.kubeconfig(User::Alice);
    let edge_admin = env.edge.kubeconfig(User::Admin);
    let (namespace, release) = ("org-a-identity-hello", "identity-hello");
    let account = format!("{release}-identity");
    install_with_greeting(alice, "identity", "identity-hello", "sealed")?;
    system::installed(&hub, "identity", 1).await?;

    // A ServiceAccount Helm would have made for the same release name, in a namespace
    // that is not the installer's, is made and deleted: not the release's, no drift.
    let foreign = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": account,
            "namespace": "default",
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {"meta.helm.sh/release-name": release,
                            "meta.helm.sh/release-namespace": namespace},
        },
    });
    let accounts =
        Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(edge.clone(), "default");
    accounts
        .create(&Default::default(), &serde_json::from_value(foreign)?)
        .await?;
    accounts.delete(&account, &Default::default()).await?;
    // Not drift now, and not later either: the drift found below comes from a write made
    // after these on the same watch (ServiceAccounts are followed by one watch across the
    // edge, whose events come in the order of the writes), and names only that write.
    let ws = installer::workspace(&hub, "org-a", "identity").await?;
    ensure!(
        has_condition(&ws, "Drifted", "False", "ReleaseInSync"),
        "another namespace's object is not the release's: {:?}",
        status_of(&ws).drift
    );

    // A hand edit of the release's own.
    providers_tests::kubectl::ok(
        edge_admin,
        &[
            "-n",
            namespace,
            "label",
            "serviceaccount",
            &account,
            "team=by-hand",
        ],
    )?;
    let ws = drifted(&hub, "identity", "ObjectChanged").await?;
    let drift = status_of(&ws).drift.context("status.drift")?;
    ensure!(
        drift.objects.len() == 1,
        "only the release's own ServiceAccount drifted: {:?}",
        drift.objects
    );
    let object = drift.objects.first().context("the drifted object")?;
    ensure!(
        object.kind == "ServiceAccount"
            && object.name == account
            && object.namespace == namespace
            && object.manager.as_deref() == Some("kubectl-label")
            && object.fields.iter().any(|f| f == "metadata.labels.team"),
        "{object:?}"
    );
    plugin::run(alice, &["repair", "identity", "--wait", "--timeout", "3m"])?.ok()?;
    system::installed(&hub, "identity", 2).await?;

    // Its deletion, and repair brings it back.
    let deleted = Deleted {
        namespace,
        kind: "ServiceAccount",
        name: &account,
    };
    deleted_is_drift_and_repaired(&hub, alice, edge_admin, "identity", deleted, 3).await?;
    ensure!(
        Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(edge.clone(), namespace)
            .get_opt(&account)
            .await?
            .is_some(),
        "the deleted ServiceAccount is back"
    );
    Ok(())
}

/// `fieldsV1` nested `depth` levels deep: deeper than a JSON decoder with the usual depth
/// limit (128) reads, and stored as it is by the API server.
fn deep_fields(depth: usize) -> serde_json::Value {
    let mut fields = json!({});
    for level in 0..depth {
        fields = json!({ format!("f:x{level}"): fields });
    }
    fields
}

/// Managed fields nobody can decode do not hide drift: an object in the release namespace,
/// labelled as Helm's, whose `managedFields` are nested 200 levels deep (any writer there
/// can store one) is in the list the installer's watch of ConfigMaps starts from (which
/// then failed whole, and the drift below went unseen), and a hand edit of the
/// chart's ConfigMap beside it is still seen; the chart's ConfigMap given such managed
/// fields itself is drift, named as changed by a manager the installer cannot read.
#[tokio::test]
async fn managed_fields_nobody_can_decode_hide_no_drift() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "deep-hello", "hello", &["0.1.0"]).await?;
    let hub = env.hub_admin().await?;
    let alice = env.hub.kubeconfig(User::Alice);
    let edge_admin = env.edge.kubeconfig(User::Admin);
    let (namespace, release) = ("org-a-deep-hello", "deep-hello");
    let configmap = format!("{release}-greeting");

    // The namespace is prepared and the Job held; the deep object goes in before helm runs,
    // so the installer's first list of the namespace's ConfigMaps holds it.
    let job = system::first_job("org-a", "deep", release);
    env.runner.hold(&job);
    plugin::run(
        alice,
        &[
            "install",
            "deep",
            "--recipe",
            "deep-hello",
            "--edge",
            installer::EDGE,
            "--set",
            "greeting=sealed",
        ],
    )?
    .ok()?;
    for _ in 0..300 {
        if env.runner.is_held(namespace, &job) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ensure!(
        env.runner.is_held(namespace, &job),
        "the Job {job} was made"
    );
    let noise = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": "deep-noise", "namespace": namespace,
            // Labelled as Helm's, so the label-selected watch of the release's kind lists it.
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "managedFields": [{
                "manager": "someone", "operation": "Update", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": deep_fields(200),
            }],
        },
        "data": {"a": "b"},
    });
    let file = tempfile::Builder::new().suffix(".json").tempfile()?;
    std::fs::write(file.path(), serde_json::to_vec(&noise)?)?;
    let path = file.path().display().to_string();
    providers_tests::kubectl::ok(
        edge_admin,
        &[
            "create",
            "--raw",
            &format!("/api/v1/namespaces/{namespace}/configmaps"),
            "-f",
            &path,
        ],
    )?;
    env.runner.release(&job);
    system::installed(&hub, "deep", 1).await?;

    // A hand edit beside the deep object is seen.
    providers_tests::kubectl::ok(
        edge_admin,
        &[
            "-n",
            namespace,
            "patch",
            "configmap",
            &configmap,
            "--type=merge",
            "-p",
            r#"{"data":{"greeting":"by-hand"}}"#,
        ],
    )?;
    let ws = drifted(&hub, "deep", "ObjectChanged").await?;
    let drift = status_of(&ws).drift.context("status.drift")?;
    ensure!(
        drift
            .objects
            .iter()
            .any(|o| o.name == configmap && o.manager.as_deref() == Some("kubectl-patch")),
        "{drift:?}"
    );

    // The chart's own ConfigMap with managed fields nobody can decode: drift, not silence.
    let deep = json!({"metadata": {"managedFields": [{
        "manager": "someone", "operation": "Update", "apiVersion": "v1",
        "fieldsType": "FieldsV1", "fieldsV1": deep_fields(200),
    }]}});
    std::fs::write(file.path(), serde_json::to_vec(&deep)?)?;
    providers_tests::kubectl::ok(
        edge_admin,
        &[
            "-n",
            namespace,
            "patch",
            "configmap",
            &configmap,
            "--type=merge",
            "--patch-file",
            &path,
        ],
    )?;
    wait_workspace(
        &hub,
        "org-a",
        "deep",
        "drift by an unreadable manager",
        |ws| {
            status_of(ws).drift.is_some_and(|d| {
                d.objects.iter().any(|o| {
                    o.name == configmap
                        && o.manager.as_deref()
                            == Some("(managed fields the installer cannot read)")
                })
            })
        },
    )
    .await?;
    // Read with kubectl: this test's own client refuses the object as the installer once did.
    let greeting = providers_tests::kubectl::ok(
        edge_admin,
        &[
            "-n",
            namespace,
            "get",
            "configmap",
            &configmap,
            "-o",
            "jsonpath={.data.greeting}",
        ],
    )?;
    ensure!(
        greeting == "by-hand",
        "nothing is corrected behind anyone's back: {greeting:?}"
    );
    Ok(())
}

/// Publishes the Recipe `name`: the hello chart with its workload (a Secret and a
/// Deployment), the execution rules helm needs for them, and `drift` as its drift policy.
async fn publish_workload(
    env: &installer::Environment,
    name: &str,
    drift: serde_json::Value,
) -> anyhow::Result<()> {
    publish_with_defaults(
        env,
        name,
        "hello",
        &["0.1.0"],
        json!({"hub": {"credentialSecret": ""}, "workload": {"enabled": true}}),
    )
    .await?;
    Api::<Recipe>::all(env.hub_admin().await?)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {
                "execution": [
                    installer::rule("", "configmaps"),
                    installer::rule("", "secrets"),
                    installer::rule("apps", "deployments"),
                    // helm's wait reads a Deployment's ReplicaSets and Pods.
                    installer::rule("apps", "replicasets"),
                    installer::rule("", "pods"),
                ],
                "drift": drift,
            }})),
        )
        .await?;
    Ok(())
}

/// The edge runs no controllers: writes a Deployment's status as its controller would once
/// its Pods are ready, so that helm's wait sees it ready.
fn deployment_ready_when_made(
    edge: Client,
    namespace: &str,
    name: &str,
) -> tokio::task::JoinHandle<()> {
    let api: Api<Deployment> = Api::namespaced(edge, namespace);
    let name = name.to_owned();
    tokio::spawn(async move {
        loop {
            if let Ok(Some(made)) = api.get_opt(&name).await {
                let now = k8s_openapi::jiff::Timestamp::now().to_string();
                let condition = |kind: &str, reason: &str| {
                    json!({"type": kind, "status": "True", "reason": reason,
                           "lastTransitionTime": now, "lastUpdateTime": now})
                };
                let status = json!({"status": {
                    "observedGeneration": made.metadata.generation,
                    "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
                    "availableReplicas": 1,
                    "conditions": [
                        condition("Available", "MinimumReplicasAvailable"),
                        condition("Progressing", "NewReplicaSetAvailable"),
                    ],
                }});
                let params = PatchParams {
                    field_manager: Some("kube-controller-manager".into()),
                    ..Default::default()
                };
                if api
                    .patch_status(&name, &params, &Patch::Merge(status))
                    .await
                    .is_ok()
                {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

/// What the Recipe says is not drift is not: a Deployment's replicas written through its
/// scale subresource (as an HPA does) when the Recipe lists `spec.replicas` for
/// Deployments, and a write by a field manager it expects. A hand edit of the chart's
/// Secret is drift, named from its managed fields; its data is never shown, and never
/// fetched (the edge's audit log).
#[tokio::test]
async fn what_the_recipe_expects_is_not_drift_and_a_secret_edit_is() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish_workload(
        env,
        "ruled-hello",
        json!({
            "ignoreManagers": ["cert-manager-cainjector"],
            "ignoreFields": [{"kind": "Deployment", "paths": ["spec.replicas"]}],
        }),
    )
    .await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let alice = env.hub.kubeconfig(User::Alice);
    let edge_admin = env.edge.kubeconfig(User::Admin);
    let (namespace, release) = ("org-a-ruled-hello", "ruled-hello");
    let _controller =
        deployment_ready_when_made(edge.clone(), namespace, &format!("{release}-web"));
    // Off the test's thread: the stand-in controller above runs on it meanwhile.
    let alice_kubeconfig = alice.to_path_buf();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        plugin::run(
            &alice_kubeconfig,
            &[
                "install",
                "ruled",
                "--recipe",
                "ruled-hello",
                "--edge",
                installer::EDGE,
                "--wait",
                "--timeout",
                "3m",
            ],
        )?
        .ok()?;
        Ok(())
    })
    .await??;
    system::installed(&hub, "ruled", 1).await?;

    // An HPA's write: replicas through the scale subresource, by the controller manager.
    Api::<Deployment>::namespaced(edge.clone(), namespace)
        .patch_scale(
            &format!("{release}-web"),
            &PatchParams {
                field_manager: Some("kube-controller-manager".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await?;
    // An expected manager's write of the ConfigMap.
    providers_tests::kubectl::ok(
        edge_admin,
        &[
            "-n",
            namespace,
            "patch",
            "configmap",
            &format!("{release}-greeting"),
            "--field-manager=cert-manager-cainjector",
            "--type=merge",
            "-p",
            r#"{"data":{"caBundle":"injected"}}"#,
        ],
    )?;
    stays_in_sync(&hub, "ruled", "expected writes are not drift").await?;

    // A hand edit of the chart's Secret.
    providers_tests::kubectl::ok(
        edge_admin,
        &[
            "-n",
            namespace,
            "patch",
            "secret",
            &format!("{release}-token"),
            "--type=merge",
            "-p",
            r#"{"stringData":{"token":"planted-by-hand"}}"#,
        ],
    )?;
    let ws = drifted(&hub, "ruled", "ObjectChanged").await?;
    let drift = status_of(&ws).drift.context("status.drift")?;
    let object = drift.objects.first().context("the drifted object")?;
    ensure!(
        object.kind == "Secret"
            && object.name == format!("{release}-token")
            && object.manager.as_deref() == Some("kubectl-patch")
            && object.fields.iter().any(|f| f == "data.token"),
        "{object:?}"
    );
    let shown = serde_json::to_string(&ws.status)?;
    ensure!(
        !shown.contains("planted-by-hand") && !shown.contains("sealed-token"),
        "a Secret's data reached the status: {shown}"
    );

    // Nor was it fetched: the edge's audit log has every Secret request of the hub's
    // identity in the namespace with what the API server answered. Its lists (the
    // namespace's Secret watch lists them) answered metadata alone, and the chart's Secret
    // was never read by name (Helm's release records are, by design: they hold the
    // release, and the installer's own attempt Secrets are its to read).
    let secret = format!("{release}-token");
    let requests = providers_tests::audit::secret_requests(&env.edge.dir, namespace)?;
    let lists: Vec<_> = requests.iter().filter(|r| r.verb == "list").collect();
    ensure!(
        !lists.is_empty(),
        "the installer's Secret lists of {namespace} are in the audit log: {requests:?}"
    );
    for list in &lists {
        ensure!(
            list.response_kind.as_deref() == Some("PartialObjectMetadataList"),
            "a list of {namespace}'s Secrets answered more than metadata: {} -> {:?}",
            list.request_uri,
            list.response_kind
        );
    }
    for request in &requests {
        // By name, only the content check's tests of it: dry runs the API server refuses
        // (422 for a failed test, 400 for the rename after tests that held), answering
        // a Status, never the Secret.
        ensure!(
            request.name.as_deref() != Some(secret.as_str()) || content_test_refused(request),
            "the installer asked for the chart's Secret by name: {} {} -> {:?} {:?}",
            request.verb,
            request.request_uri,
            request.response_code,
            request.response_kind
        );
        for data in ["planted-by-hand", "cGxhbnRlZC1ieS1oYW5k"] {
            ensure!(
                !request.line.contains(data),
                "the chart's Secret data reached the installer: {} {}",
                request.verb,
                request.request_uri
            );
        }
    }
    Ok(())
}

/// Under a Recipe's `drift.repair: Automatic`, a hand edit is repaired without anyone
/// asking: the installer asks, the webhook seals the same plan for its owner. Drift again
/// within the quiet period stops it (Stalled, RepairLoop) instead of taking turns with the
/// other writer, and only the installer's identity may ask: alice's request in its name is
/// refused. A repair by hand still works.
#[tokio::test]
async fn automatic_repair_runs_once_and_stops_on_repeated_drift() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "healing-hello", "hello", &["0.1.0"]).await?;
    let hub = env.hub_admin().await?;
    Api::<Recipe>::all(hub.clone())
        .patch(
            "healing-hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"drift": {
                "repair": "Automatic",
                "repairQuietPeriodSeconds": 600,
            }}})),
        )
        .await?;
    let edge = env.edge_admin().await?;
    let alice = env.hub.kubeconfig(User::Alice);
    let edge_admin = env.edge.kubeconfig(User::Admin);
    let (namespace, release) = ("org-a-healing-hello", "healing-hello");
    let configmap = format!("{release}-greeting");
    let edit = |greeting: &str| {
        providers_tests::kubectl::ok(
            edge_admin,
            &[
                "-n",
                namespace,
                "patch",
                "configmap",
                &configmap,
                "--type=merge",
                "-p",
                &json!({"data": {"greeting": greeting}}).to_string(),
            ],
        )
    };
    install_with_greeting(alice, "healing", "healing-hello", "sealed")?;
    system::installed(&hub, "healing", 1).await?;
    let jobs: Api<Job> = Api::namespaced(edge.clone(), namespace);
    let mut seen = std::collections::BTreeSet::new();
    next_completed_job(&jobs, &mut seen).await?;

    // A hand edit: repaired by attempt 2, alice's, without anyone asking.
    edit("by-hand")?;
    next_completed_job(&jobs, &mut seen).await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(edge.clone(), namespace);
    let repaired = configmaps.get(&configmap).await?;
    // A writer fighting the chart puts its value back the moment the repair's Job ends:
    // automatic repair stops within the quiet period and names it.
    configmaps
        .patch(
            &configmap,
            &PatchParams {
                field_manager: Some("fighting-writer".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"greeting": "fought"}})),
        )
        .await?;
    ensure!(
        repaired
            .data
            .as_ref()
            .and_then(|d| d.get("greeting"))
            .map(String::as_str)
            == Some("sealed"),
        "the repair put the sealed value back: {:?}",
        repaired.data
    );
    let ws = wait_workspace(&hub, "org-a", "healing", "Stalled RepairLoop", |ws| {
        has_condition(ws, "Stalled", "True", "RepairLoop")
            && has_condition(ws, "Drifted", "True", "ObjectChanged")
    })
    .await?;
    let plan = &ws.spec.plan.as_ref().context("the plan")?.plan;
    ensure!(
        plan.attempt == 2
            && plan.cause == Some(Cause::AutomaticRepair)
            && plan.owner.username == "alice",
        "attempt {} {:?} for {}",
        plan.attempt,
        plan.cause,
        plan.owner.username
    );
    ensure!(
        ws.metadata
            .annotations
            .as_ref()
            .is_none_or(|a| !a.contains_key("providers.platform.dev/automatic-repair")),
        "the request is consumed, never stored"
    );
    let drift = status_of(&ws).drift.context("status.drift")?;
    ensure!(
        drift
            .objects
            .iter()
            .any(|o| o.manager.as_deref() == Some("fighting-writer")),
        "the drift names the writer that fights: {drift:?}"
    );
    let reasons = installer::event_reasons(&hub, &ws).await?;
    ensure!(
        reasons.iter().any(|r| r == "AutomaticRepairRequested"),
        "{reasons:?}"
    );
    let retry = ws.spec.retry;
    // Nothing more is asked for, checked for a bound longer than the installer takes to
    // ask (it asked for attempt 2 within a second or two of the first edit).
    let until = std::time::Instant::now() + QUIET;
    while std::time::Instant::now() < until {
        let ws = installer::workspace(&hub, "org-a", "healing").await?;
        ensure!(
            ws.spec.plan.as_ref().map(|p| p.plan.attempt) == Some(2) && ws.spec.retry == retry,
            "no third attempt: {:?}",
            ws.spec.plan.as_ref().map(|p| p.plan.attempt)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ensure!(
        rendered(&edge, namespace, release).await?.map(|r| r.0) == Some("fought".into()),
        "not repaired in a loop"
    );
    let reasons = installer::event_reasons(&hub, &ws).await?;
    ensure!(
        reasons.iter().any(|r| r == "AutomaticRepairStopped"),
        "{reasons:?}"
    );

    // alice asks for an "automatic" repair in her own name: refused by the webhook.
    let asked = providers_tests::kubectl::run(
        alice,
        &[
            "-n",
            "org-a",
            "patch",
            "workspace",
            "healing",
            "--type=merge",
            "-p",
            &json!({
                "metadata": {"annotations": {"providers.platform.dev/automatic-repair": "2"}},
                "spec": {"retry": retry.unwrap_or(0) + 1},
            })
            .to_string(),
        ],
    )?;
    let said = String::from_utf8_lossy(&asked.stderr);
    ensure!(
        !asked.status.success() && said.contains("only the providers installer asks"),
        "{said}"
    );

    // A repair by hand still works, and ends the stop.
    plugin::run(alice, &["repair", "healing", "--wait", "--timeout", "3m"])?.ok()?;
    let ws = system::installed(&hub, "healing", 3).await?;
    ensure!(
        ws.spec.plan.as_ref().and_then(|p| p.plan.cause) == Some(Cause::Repair),
        "a repair by hand"
    );
    ensure!(
        !has_condition(&ws, "Stalled", "True", "RepairLoop"),
        "no longer stalled"
    );
    ensure!(
        rendered(&edge, namespace, release).await?.map(|r| r.0) == Some("sealed".into()),
        "the sealed value is back"
    );
    Ok(())
}

/// Writers that describe their own write hide nothing from the content check: an edit
/// made as the field manager `helm`, and one that rewrites `managedFields` to show Helm's
/// entry alone, leave no writer to report, and both are drift found by contents.
#[tokio::test]
async fn edits_hidden_from_field_managers_are_drift_by_contents() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish(env, "hidden-hello", "hello", &["0.1.0"]).await?;
    let (hub, edge) = (env.hub_admin().await?, env.edge_admin().await?);
    let alice = env.hub.kubeconfig(User::Alice);
    let (namespace, release) = ("org-a-hidden-hello", "hidden-hello");
    let configmap = format!("{release}-greeting");
    let configmaps: Api<ConfigMap> = Api::namespaced(edge.clone(), namespace);
    install_with_greeting(alice, "hidden", "hidden-hello", "sealed")?;
    system::installed(&hub, "hidden", 1).await?;

    // Written as `helm`: the field managers show Helm's writes only.
    configmaps
        .patch(
            &configmap,
            &written_as("helm"),
            &Patch::Merge(json!({"data": {"greeting": "as-helm"}})),
        )
        .await?;
    drifted_by_contents(&hub, "hidden", &configmap, "data.greeting").await?;
    plugin::run(alice, &["repair", "hidden", "--wait", "--timeout", "3m"])?.ok()?;
    system::installed(&hub, "hidden", 2).await?;
    ensure!(
        rendered(&edge, namespace, release).await?.map(|r| r.0) == Some("sealed".into()),
        "the repair puts the sealed value back"
    );

    // An edit, then a write of nothing but managedFields, which keeps Helm's entries
    // alone (a write that changes no field adds no entry of its own).
    configmaps
        .patch(
            &configmap,
            &written_as("kubectl-edit"),
            &Patch::Merge(json!({"data": {"greeting": "hidden"}})),
        )
        .await?;
    let live = configmaps.get(&configmap).await?;
    let helm_only: Vec<_> = live
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter(|entry| entry.manager.as_deref() == Some("helm"))
        .collect();
    ensure!(!helm_only.is_empty(), "helm's entries on {configmap}");
    configmaps
        .patch(
            &configmap,
            &written_as("kubectl-edit"),
            &Patch::Merge(json!({"metadata": {"managedFields": helm_only}})),
        )
        .await?;
    let after = configmaps.get(&configmap).await?;
    let managers: Vec<_> = after
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.manager.clone())
        .collect();
    ensure!(
        managers.iter().all(|m| m == "helm"),
        "the API server kept the managed fields as written: {managers:?}"
    );
    drifted_by_contents(&hub, "hidden", &configmap, "data.greeting").await?;
    // A key the chart does not set, added as `helm`: helm's entries claim a field the
    // manifest does not set.
    plugin::run(alice, &["repair", "hidden", "--wait", "--timeout", "3m"])?.ok()?;
    system::installed(&hub, "hidden", 3).await?;
    configmaps
        .patch(
            &configmap,
            &written_as("helm"),
            &Patch::Merge(json!({"data": {"extra": "added-as-helm"}})),
        )
        .await?;
    drifted_by_contents(&hub, "hidden", &configmap, "data.extra").await?;
    Ok(())
}

/// An edit made while the attempt ran (here, while helm waited for the Deployment) comes
/// before the attempt's end in the edge's order, so its field managers call it the
/// attempt's own; the check right after the attempt compares contents and finds it. A
/// chart's Secret written as `helm` is found the same way, compared by the edge's API
/// server: the hub never reads its data (the edge's audit log).
#[tokio::test]
async fn an_edit_made_while_the_attempt_ran_is_drift_by_contents() -> anyhow::Result<()> {
    let System { env, .. } = system().await?;
    publish_workload(env, "during-hello", json!({})).await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let alice = env.hub.kubeconfig(User::Alice);
    let (namespace, release) = ("org-a-during-hello", "during-hello");
    let configmap = format!("{release}-greeting");
    // While helm waits for the Deployment: the ConfigMap it made is edited by hand, and
    // only then is the Deployment ready.
    let during = {
        let (edge, configmap) = (edge.clone(), configmap.clone());
        tokio::spawn(async move {
            let configmaps: Api<ConfigMap> = Api::namespaced(edge.clone(), namespace);
            loop {
                let edited = configmaps
                    .patch(
                        &configmap,
                        &written_as("kubectl-patch"),
                        &Patch::Merge(json!({"data": {"greeting": "during"}})),
                    )
                    .await;
                if edited.is_ok() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            deployment_ready_when_made(edge, namespace, &format!("{release}-web")).await
        })
    };
    let alice_kubeconfig = alice.to_path_buf();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        plugin::run(
            &alice_kubeconfig,
            &[
                "install",
                "during",
                "--recipe",
                "during-hello",
                "--edge",
                installer::EDGE,
                "--wait",
                "--timeout",
                "3m",
            ],
        )?
        .ok()?;
        Ok(())
    })
    .await??;
    during.await??;
    drifted_by_contents(&hub, "during", &configmap, "data.greeting").await?;
    // What the field managers say: the edit came before the attempt's Job completed.
    let job = Api::<Job>::namespaced(edge.clone(), namespace)
        .get(&system::first_job("org-a", "during", release))
        .await?;
    let completed = job
        .status
        .and_then(|s| s.completion_time)
        .context("the Job's completion")?;
    let edit = Api::<ConfigMap>::namespaced(edge.clone(), namespace)
        .get(&configmap)
        .await?
        .metadata
        .managed_fields
        .into_iter()
        .flatten()
        .find(|e| e.manager.as_deref() == Some("kubectl-patch"))
        .and_then(|e| e.time)
        .context("the edit's managed fields entry")?;
    ensure!(
        edit.0 <= completed.0,
        "edited {edit:?}, completed {completed:?}"
    );

    plugin::run(alice, &["repair", "during", "--wait", "--timeout", "3m"])?.ok()?;
    system::installed(&hub, "during", 2).await?;

    // The chart's Secret, written as `helm`.
    let secret = format!("{release}-token");
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(edge.clone(), namespace)
        .patch(
            &secret,
            &written_as("helm"),
            &Patch::Merge(json!({"stringData": {"token": "planted-as-helm"}})),
        )
        .await?;
    let ws = drifted_by_contents(&hub, "during", &secret, "data.token").await?;
    let shown = serde_json::to_string(&ws.status)?;
    ensure!(
        !shown.contains("planted-as-helm") && !shown.contains("sealed-token"),
        "a Secret's data reached the status: {shown}"
    );
    let requests = providers_tests::audit::secret_requests(&env.edge.dir, namespace)?;
    let tests: Vec<_> = requests
        .iter()
        .filter(|r| r.name.as_deref() == Some(secret.as_str()))
        .collect();
    ensure!(
        !tests.is_empty(),
        "the Secret's tests in the audit log: {requests:?}"
    );
    for request in &tests {
        ensure!(
            content_test_refused(request),
            "{} {} -> {:?} {:?}",
            request.verb,
            request.request_uri,
            request.response_code,
            request.response_kind
        );
    }
    for request in &requests {
        for data in ["planted-as-helm", "cGxhbnRlZC1hcy1oZWxt"] {
            ensure!(
                !request.line.contains(data),
                "the Secret's live data reached the installer: {} {}",
                request.verb,
                request.request_uri
            );
        }
    }
    // A variable added to the chart's container as `helm` (the chart sets none): helm's
    // managed fields claim `env` under the container's key, which the manifest lacks.
    let web = format!("{release}-web");
    Api::<Deployment>::namespaced(edge.clone(), namespace)
        .patch(
            &web,
            &written_as("helm"),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "web", "env": [{"name": "MODE", "value": "evil"}]}
            ]}}}})),
        )
        .await?;
    drifted_by_contents(
        &hub,
        "during",
        &web,
        "spec.template.spec.containers[name=web].env",
    )
    .await?;
    Ok(())
}

/// Whether an audited Secret request is one of the content check's tests, refused as it
/// must be: a dry-run patch answered with a Status, 422 (a test failed) or 400 (renamed).
fn content_test_refused(request: &providers_tests::audit::SecretRequest) -> bool {
    request.verb == "patch"
        && request.request_uri.contains("dryRun=All")
        && matches!(request.response_code, Some(400 | 422))
        && request.response_kind.as_deref() == Some("Status")
}

/// Patch parameters that write as the field manager `manager`.
fn written_as(manager: &str) -> PatchParams {
    PatchParams {
        field_manager: Some(manager.into()),
        ..Default::default()
    }
}
