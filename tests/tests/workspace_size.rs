//! A Workspace stays small whatever its Recipe's defaults weigh and however long its
//! history (ADR 35), through the whole system (the real webhook and installer on a hub, an
//! edge whose Jobs run the real helm, alice using `kubectl provider`):
//!
//! - a Recipe with 300 KB of defaults takes ten attempts and a rollback to the first, and
//!   the Workspace stays under [`WORKSPACE_BOUND`] throughout;
//! - values changed on the hub after sealing are refused before anything runs, and values
//!   gone refuse the rollback that needs them;
//! - a dry run stores nothing, values stored for a write the API server then refused are
//!   swept, and a Recipe whose defaults could never fit is refused when written.

use std::{collections::BTreeMap, path::Path, time::Duration};

use anyhow::{Context, ensure};
use k8s_openapi::api::{batch::v1::Job, core::v1::ConfigMap, core::v1::ResourceQuota};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
    core::ObjectMeta,
};
use providers_shared::{
    api::{ChartRef, PlanValues, Recipe, RecipeSpec},
    plan_values::{self, LABEL_WORKSPACE, MAX_PENDING, MAX_RECIPE_VALUES_BYTES},
};
use providers_tests::{
    User,
    installer::{self, has_condition, status_of, wait_workspace},
    plugin,
    system::{self, System},
};
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// The most a Workspace of these tests may weigh as the API server serves it (its JSON,
/// managed fields included), whatever its Recipe's defaults and however many attempts:
/// docs/adr/0035 derives it.
const WORKSPACE_BOUND: usize = 32 * 1024;

/// Held by every test here for its whole run: one of them refuses every create in org-a
/// for a moment, and fills the namespace's bound of values waiting for their Workspace.
static SERIAL: Mutex<()> = Mutex::const_new(());

async fn system() -> anyhow::Result<&'static System> {
    system::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane"))).await
}

/// Publishes the Recipe `name` of the hello chart 0.1.0 with `defaults`; tenants set
/// `greeting`.
async fn publish(env: &installer::Environment, name: &str, defaults: Value) -> anyhow::Result<()> {
    system::publish_with_defaults(env, name, "hello", &["0.1.0"], defaults).await
}

/// Alice installs `name` of `recipe` with `greeting` and waits for its result.
async fn install(alice: &Path, name: &str, recipe: &str, greeting: &str) -> anyhow::Result<()> {
    let greeting = format!("greeting={greeting}");
    plugin::run(
        alice,
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

/// A Recipe of the hello chart with `defaults`, not written.
fn recipe(name: &str, defaults: Value) -> Recipe {
    Recipe::new(
        name,
        RecipeSpec {
            drift: None,
            chart: ChartRef {
                repository: "https://charts.example/stable".into(),
                name: "hello".into(),
            },
            versions: vec!["0.1.0".into()],
            namespace: None,
            release: None,
            values: Some(defaults),
            values_schema: Vec::new(),
            execution: Vec::new(),
            runtime_credential: None,
        },
    )
}

/// The Workspace as the API server serves it (what etcd stores, in JSON), and its size.
async fn stored_size(hub: &Client, name: &str) -> anyhow::Result<usize> {
    let raw = hub
        .request_text(
            http::Request::get(format!(
                "/apis/providers.platform.dev/v1alpha1/namespaces/org-a/workspaces/{name}"
            ))
            .body(Vec::new())?,
        )
        .await?;
    Ok(raw.len())
}

/// The PlanValues objects stored for the Workspace `name`.
async fn values_objects(hub: &Client, name: &str) -> anyhow::Result<Vec<PlanValues>> {
    Ok(Api::<PlanValues>::namespaced(hub.clone(), "org-a")
        .list(&ListParams::default().labels(&format!("{LABEL_WORKSPACE}={name}")))
        .await?
        .items)
}

/// The hello chart's greeting on the edge.
async fn greeting(edge: &Client, recipe: &str) -> anyhow::Result<Option<String>> {
    Ok(
        Api::<ConfigMap>::namespaced(edge.clone(), &format!("org-a-{recipe}"))
            .get_opt(&format!("{recipe}-greeting"))
            .await?
            .and_then(|c| c.data?.get("greeting").cloned()),
    )
}

#[tokio::test]
async fn ten_attempts_and_a_rollback_with_300_kb_of_defaults_keep_the_workspace_small()
-> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let System { env, .. } = system().await?;
    let defaults = system::heavy_defaults();
    let weight = plan_values::values_text_len(&defaults);
    ensure!(weight > 300_000, "the defaults weigh {weight} bytes");
    publish(env, "heavy-hello", defaults).await?;
    let (hub, edge) = (env.hub_admin().await?, env.edge_admin().await?);
    let alice = env.hub.kubeconfig(User::Alice);
    install(alice, "heavy", "heavy-hello", "v1").await?;
    let mut sizes = vec![stored_size(&hub, "heavy").await?];
    for attempt in 2..=10 {
        let greeting = format!("greeting=v{attempt}");
        plugin::run(
            alice,
            &[
                "set",
                "heavy",
                "--set",
                &greeting,
                "--wait",
                "--timeout",
                "3m",
            ],
        )?
        .ok()?;
        system::installed(&hub, "heavy", attempt).await?;
        sizes.push(stored_size(&hub, "heavy").await?);
    }
    eprintln!("stored size after attempts 1..=10: {sizes:?}");
    ensure!(
        sizes.iter().all(|size| *size <= WORKSPACE_BOUND),
        "every size under {WORKSPACE_BOUND}: {sizes:?}"
    );
    ensure!(greeting(&edge, "heavy-hello").await? == Some("v10".into()));
    // One object per distinct values, each owned by the Workspace.
    let ws = installer::workspace(&hub, "org-a", "heavy").await?;
    let stored = values_objects(&hub, "heavy").await?;
    ensure!(stored.len() == 10, "{} values objects", stored.len());
    let uid = ws.metadata.uid.clone().context("uid")?;
    for object in &stored {
        let owners = object.metadata.owner_references.clone().unwrap_or_default();
        ensure!(
            owners.iter().any(|o| o.uid == uid && o.kind == "Workspace"),
            "{:?} is owned by the Workspace: {owners:?}",
            object.metadata.name
        );
        ensure!(
            object.spec.data.len() < weight / 4,
            "stored compressed: {} bytes of data for {weight}",
            object.spec.data.len()
        );
    }

    // Back to attempt 1: its plan kept, its values stored once and used again.
    plugin::run(
        alice,
        &[
            "rollback",
            "heavy",
            "--to-attempt",
            "1",
            "--wait",
            "--timeout",
            "3m",
        ],
    )?
    .ok()?;
    let ws = system::installed(&hub, "heavy", 11).await?;
    let plan = ws.spec.plan.clone().context("sealed")?.plan;
    ensure!(plan.restores == Some(1), "{plan:?}");
    ensure!(greeting(&edge, "heavy-hello").await? == Some("v1".into()));
    ensure!(values_objects(&hub, "heavy").await?.len() == 10, "none new");
    let size = stored_size(&hub, "heavy").await?;
    eprintln!("stored size after the rollback (attempt 11): {size}");
    ensure!(size <= WORKSPACE_BOUND, "{size}");
    let verified = plugin::run(alice, &["plan", "heavy", "--verify"])?;
    let verified = verified.ok()?;
    ensure!(
        verified.contains("values as sealed") && verified.contains("component-0999"),
        "{verified}"
    );
    Ok(())
}

#[tokio::test]
async fn values_changed_or_gone_on_the_hub_never_run() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let System { env, .. } = system().await?;
    publish(
        env,
        "tamper-hello",
        json!({"hub": {"credentialSecret": ""}}),
    )
    .await?;
    let (hub, edge) = (env.hub_admin().await?, env.edge_admin().await?);
    let alice = env.hub.kubeconfig(User::Alice);
    install(alice, "tampered", "tamper-hello", "first").await?;
    let first = installer::workspace(&hub, "org-a", "tampered")
        .await?
        .spec
        .plan
        .context("sealed")?
        .plan;
    plugin::run(
        alice,
        &[
            "set",
            "tampered",
            "--set",
            "greeting=second",
            "--wait",
            "--timeout",
            "3m",
        ],
    )?
    .ok()?;
    system::installed(&hub, "tampered", 2).await?;

    // The API server refuses a change of stored values, whoever asks.
    let digest = first.values_digest.clone().context("a values digest")?;
    let name = plan_values::object_name("tampered", &digest);
    let values: Api<PlanValues> = Api::namespaced(hub.clone(), "org-a");
    let evil = plan_values::encode(&json!({"greeting": "evil", "hub": {"credentialSecret": ""}}))?;
    let changed = values
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"data": evil.data}})),
        )
        .await;
    ensure!(
        matches!(&changed, Err(kube::Error::Api(s)) if s.message.contains("spec is immutable")),
        "{changed:?}"
    );
    // Alice may read them, not write them.
    let as_alice: Api<PlanValues> = Api::namespaced(env.hub.client(User::Alice).await?, "org-a");
    as_alice.get(&name).await?;
    let written = as_alice.delete(&name, &DeleteParams::default()).await;
    ensure!(
        matches!(&written, Err(kube::Error::Api(s)) if s.code == 403),
        "{written:?}"
    );
    // An admin replaces them: the sealed digest's name, other content.
    values.delete(&name, &DeleteParams::default()).await?;
    let replaced = PlanValues {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(BTreeMap::from([(
                LABEL_WORKSPACE.into(),
                "tampered".into(),
            )])),
            annotations: Some(BTreeMap::from([(
                plan_values::ANNOTATION_WORKSPACE.into(),
                "tampered".into(),
            )])),
            ..Default::default()
        },
        spec: providers_shared::api::PlanValuesSpec {
            digest: digest.clone(),
            ..evil
        },
    };
    values.create(&PostParams::default(), &replaced).await?;
    let rolled = plugin::run(alice, &["rollback", "tampered", "--to-attempt", "1"])?;
    rolled.ok()?;
    let ws = wait_workspace(&hub, "org-a", "tampered", "attempt 3 refused", |ws| {
        status_of(ws).attempt == Some(3) && has_condition(ws, "Failed", "True", "ValuesInvalid")
    })
    .await?;
    let failed = ws
        .status
        .as_ref()
        .and_then(|s| s.condition("Failed"))
        .context("Failed")?;
    ensure!(
        failed.message.contains("changed after the plan was sealed")
            && failed.message.contains("Nothing was created"),
        "{}",
        failed.message
    );
    let job = ws.spec.plan.context("sealed")?.plan.job;
    ensure!(
        Api::<Job>::namespaced(edge.clone(), "org-a-tamper-hello")
            .get_opt(&job)
            .await?
            .is_none(),
        "no Job for attempt 3"
    );
    ensure!(
        greeting(&edge, "tamper-hello").await? == Some("second".into()),
        "the release is as attempt 2 left it"
    );
    let verify = plugin::run(alice, &["plan", "tampered", "--verify"])?;
    ensure!(
        verify.code != 0 && verify.stderr.contains("changed after the plan was sealed"),
        "{verify:?}"
    );

    // Gone: the webhook refuses to seal a plan whose values it can no longer find.
    values.delete(&name, &DeleteParams::default()).await?;
    let refused = plugin::run(alice, &["rollback", "tampered", "--to-attempt", "1"])?;
    ensure!(
        refused.code != 0 && refused.stderr.contains("no longer stored on the hub"),
        "{refused:?}"
    );
    Ok(())
}

#[tokio::test]
async fn dry_runs_and_refused_writes_leave_no_values_behind() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let System { env, .. } = system().await?;
    publish(env, "dry-hello", json!({"hub": {"credentialSecret": ""}})).await?;
    let hub = env.hub_admin().await?;
    let alice = env.hub.kubeconfig(User::Alice);

    let dry = plugin::run(
        alice,
        &[
            "install",
            "dry",
            "--recipe",
            "dry-hello",
            "--edge",
            installer::EDGE,
            "--set",
            "greeting=dry",
            "--dry-run",
        ],
    )?;
    ensure!(dry.ok()?.contains("server dry run"), "{dry:?}");
    ensure!(
        values_objects(&hub, "dry").await?.is_empty(),
        "nothing stored for a dry run"
    );

    // A quota the API server checks after the webhooks refuses the create: the values the
    // webhook stored for it go with the installer's next sweep.
    let quotas: Api<ResourceQuota> = Api::namespaced(hub.clone(), "org-a");
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "no-more-workspaces"},
        "spec": {"hard": {"count/workspaces.providers.platform.dev": "0"}},
    }))?;
    quotas.create(&PostParams::default(), &quota).await?;
    // No quota controller runs here: the status it would write, by hand.
    let counted = json!({"status": {
        "hard": {"count/workspaces.providers.platform.dev": "0"},
        "used": {"count/workspaces.providers.platform.dev": "0"},
    }});
    quotas
        .patch_status(
            "no-more-workspaces",
            &PatchParams::default(),
            &Patch::Merge(&counted),
        )
        .await?;
    let refused = plugin::run(
        alice,
        &[
            "install",
            "refused",
            "--recipe",
            "dry-hello",
            "--edge",
            installer::EDGE,
            "--set",
            "greeting=refused",
        ],
    );
    quotas
        .delete("no-more-workspaces", &DeleteParams::default())
        .await?;
    let refused = refused?;
    ensure!(refused.code != 0, "the quota refuses it: {refused:?}");
    ensure!(
        installer::workspace(&hub, "org-a", "refused")
            .await
            .is_err(),
        "not stored"
    );
    ensure!(
        values_objects(&hub, "refused").await?.len() == 1,
        "stored before the API server refused the write"
    );
    installer::eventually(
        "the refused write's values swept",
        Duration::from_secs(60),
        || {
            let hub = hub.clone();
            async move {
                let left = values_objects(&hub, "refused").await?;
                ensure!(left.is_empty(), "{} left", left.len());
                Ok(Some(()))
            }
        },
    )
    .await?;
    Ok(())
}

/// Values stored for writes the API server then refuses cannot pile up: past the
/// namespace's bound of values waiting for their Workspace, the webhook stores no more.
#[tokio::test]
async fn values_waiting_for_their_workspaces_are_bounded() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let System { env, .. } = system().await?;
    publish(env, "pile-hello", json!({"hub": {"credentialSecret": ""}})).await?;
    let values: Api<PlanValues> = Api::namespaced(env.hub_admin().await?, "org-a");
    // As a burst of refused writes leaves them (sealed "later", so no sweep takes them
    // during the test).
    let later = (k8s_openapi::jiff::Timestamp::now() + Duration::from_secs(3600)).to_string();
    for i in 0..MAX_PENDING {
        let spec = plan_values::encode(&json!({"greeting": format!("pile {i}")}))?;
        let object = PlanValues {
            metadata: ObjectMeta {
                name: Some(plan_values::object_name(&format!("pile-{i}"), &spec.digest)),
                labels: Some(BTreeMap::from([
                    (plan_values::LABEL_ADOPTED.into(), "false".into()),
                    ("pile".into(), "true".into()),
                ])),
                annotations: Some(BTreeMap::from([
                    (
                        plan_values::ANNOTATION_WORKSPACE.into(),
                        format!("pile-{i}"),
                    ),
                    (plan_values::ANNOTATION_LAST_SEALED.into(), later.clone()),
                ])),
                ..Default::default()
            },
            spec,
        };
        values.create(&PostParams::default(), &object).await?;
    }
    let refused = plugin::run(
        env.hub.kubeconfig(User::Alice),
        &[
            "install",
            "one-more",
            "--recipe",
            "pile-hello",
            "--edge",
            installer::EDGE,
            "--set",
            "greeting=one-more",
        ],
    )?;
    values
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("pile=true"),
        )
        .await?;
    ensure!(
        refused.code != 0
            && refused
                .stderr
                .contains(&format!("PlanValues in namespace org-a are waiting for their Workspaces (the most is {MAX_PENDING})"))
            && refused.stderr.contains("try again in a few minutes"),
        "{refused:?}"
    );
    ensure!(
        values_objects(&env.hub_admin().await?, "one-more")
            .await?
            .is_empty()
    );
    // Once they are gone, the same install goes through.
    plugin::run(
        env.hub.kubeconfig(User::Alice),
        &[
            "install",
            "one-more",
            "--recipe",
            "pile-hello",
            "--edge",
            installer::EDGE,
            "--set",
            "greeting=one-more",
        ],
    )?
    .ok()?;
    Ok(())
}

#[tokio::test]
async fn a_recipe_whose_defaults_could_never_fit_is_refused_when_written() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let System { env, .. } = system().await?;
    let recipes = Api::<Recipe>::all(env.hub_admin().await?);
    let over = json!({"blob": "x".repeat(MAX_RECIPE_VALUES_BYTES)});
    let refused = recipes
        .create(&PostParams::default(), &recipe("too-heavy", over))
        .await;
    let Err(kube::Error::Api(status)) = &refused else {
        anyhow::bail!("refused: {refused:?}");
    };
    ensure!(
        status.message.contains("spec.values: the defaults are")
            && status
                .message
                .contains(&format!("more than the {MAX_RECIPE_VALUES_BYTES}"))
            && status.message.contains("split the recipe"),
        "{}",
        status.message
    );
    // Nested deeper than the webhook reads: refused in words, not as an unknown error.
    let mut deep = json!("leaf");
    for _ in 0..150 {
        deep = json!({ "a": deep });
    }
    let refused = recipes
        .create(&PostParams::default(), &recipe("too-deep", deep))
        .await;
    ensure!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.message.contains("spec.values: the Recipe cannot be read") && s.message.contains("write them less deeply")),
        "{refused:?}"
    );
    // Within the limit, it is written; made heavier by an update, it is refused too.
    let fits = json!({"blob": "x".repeat(MAX_RECIPE_VALUES_BYTES - 1024)});
    recipes
        .create(&PostParams::default(), &recipe("heavy-but-fits", fits))
        .await?;
    let heavier = recipes
        .patch(
            "heavy-but-fits",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"values": {"more": "y".repeat(2048)}}})),
        )
        .await;
    ensure!(
        matches!(&heavier, Err(kube::Error::Api(s)) if s.reason == "RecipeValuesTooLarge" || s.message.contains("spec.values: the defaults are")),
        "{heavier:?}"
    );
    Ok(())
}
