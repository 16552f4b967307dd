//! The hub restored from a backup (ADR 41), through the whole system: the real webhook and
//! installer on a hub, an edge whose Jobs the job runner runs with the real helm, and the
//! real kubectl exporting and applying the backup as an operator would.
//!
//! Workspaces are installed (one upgraded, so it has a kept plan), exported with
//! `kubectl get -o yaml` with their PlanValues, the installer is stopped, the hub's objects
//! are lost (finalizers forced off, nothing cleaned up on the edge), and the export is
//! applied again, stripped the way a backup tool restores objects: new UIDs, no
//! resourceVersion, no status. Then the installer starts again, and:
//!
//! - every restored Workspace is sealed again for its new UID, as a new attempt of the
//!   restoring user, and the carried plan is never what runs;
//! - each release on the edge is upgraded in place (the next Helm revision, the same
//!   namespace and objects), not installed from scratch;
//! - nothing of the old Workspace UIDs is left on the edge, and nothing they owned on the
//!   hub holds the restored ones' values;
//! - a Workspace of another organization, of the same name, carrying the backup's plan,
//!   cannot claim the restored release's namespace.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{Context, bail, ensure};
use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{ConfigMap, Namespace, Secret, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ListParams, Patch, PatchParams},
};
use providers_shared::api::{PlanValues, Workspace};
use providers_tests::{
    User,
    installer::{
        self, ControllerOptions, ControllerProcess, Environment, Options, has_condition, status_of,
        wait_workspace,
    },
    kubectl, platform, plugin,
    system::publish,
    webhook::Webhook,
};
use serde_json::{Value, json};

const ORG: &str = "org-a";
/// The Recipe whose namespace is fixed for every organization (`restore-shared`), so a
/// Workspace of another organization aims at the restored release's namespace.
const SHARED: &str = "restore-shared";
const LABEL_UID: &str = "providers.platform.dev/workspace-uid";

fn controller_options(run: &str) -> ControllerOptions {
    ControllerOptions {
        args: [
            "--plan-values-grace",
            "5",
            "--plan-values-sweep-interval",
            "2",
        ]
        .map(String::from)
        .to_vec(),
        ..ControllerOptions::new("", &format!("restore-{run}"), "lease-restore")
    }
}

/// A Recipe whose namespace and release are one fixed name, whoever installs it.
async fn publish_shared(env: &Environment) -> anyhow::Result<()> {
    let mut recipe =
        providers_tests::system::greeting_recipe(SHARED, &env.repo.url, "hello", &["0.1.0"]);
    recipe.spec.namespace = Some(SHARED.into());
    recipe.spec.release = Some(SHARED.into());
    providers_tests::system::apply_recipe(&env.hub_admin().await?, &recipe).await
}

fn install(env: &Environment, name: &str, recipe: &str, greeting: &str) -> anyhow::Result<()> {
    let set = format!("greeting={greeting}");
    let args = [
        "install",
        name,
        "--recipe",
        recipe,
        "--edge",
        "edge-1",
        "--set",
        &set,
        "--wait",
        "--timeout",
        "120s",
    ];
    plugin::run(env.hub.kubeconfig(User::Alice), &args)?
        .ok()
        .map(drop)
}

/// What the edge holds of one release: its namespace's UID, the newest Helm revision, and
/// the UID of the chart's ConfigMap.
#[derive(Debug, PartialEq)]
struct OnEdge {
    namespace_uid: String,
    revision: i64,
    configmap_uid: String,
    greeting: String,
}

async fn on_edge(edge: &Client, namespace: &str, release: &str) -> anyhow::Result<OnEdge> {
    let ns = Api::<Namespace>::all(edge.clone()).get(namespace).await?;
    let records = Api::<Secret>::namespaced(edge.clone(), namespace)
        .list_metadata(&ListParams::default().labels(&format!("owner=helm,name={release}")))
        .await?;
    let revision = records
        .items
        .iter()
        .filter_map(|r| r.labels().get("version")?.parse::<i64>().ok())
        .max()
        .context("the release has Helm records")?;
    let configmap = Api::<ConfigMap>::namespaced(edge.clone(), namespace)
        .get(&format!("{release}-greeting"))
        .await?;
    Ok(OnEdge {
        namespace_uid: ns.uid().unwrap_or_default(),
        revision,
        configmap_uid: configmap.uid().unwrap_or_default(),
        greeting: configmap
            .data
            .and_then(|d| d.get("greeting").cloned())
            .unwrap_or_default(),
    })
}

/// `kubectl get <kind> -n org-a -o yaml`, as the platform admin: what an operator keeps.
fn export(env: &Environment, kind: &str, dir: &Path) -> anyhow::Result<PathBuf> {
    let yaml = kubectl::ok(
        env.hub.kubeconfig(User::PlatformAdmin),
        &["get", kind, "-n", ORG, "-o", "yaml"],
    )?;
    let path = dir.join(format!("{kind}.yaml"));
    std::fs::write(&path, yaml)?;
    Ok(path)
}

/// The export as a backup tool restores it: metadata the API server assigns (UID,
/// resourceVersion, creation time, generation, managed fields) and status dropped; labels,
/// annotations, finalizers, owner references and the whole spec, spec.plan included, kept.
fn restorable(export: &Path) -> anyhow::Result<PathBuf> {
    let mut list: Value = serde_norway::from_str(&std::fs::read_to_string(export)?)?;
    for item in list["items"].as_array_mut().context("a List")? {
        let object = item.as_object_mut().context("an object")?;
        object.remove("status");
        let metadata = object["metadata"].as_object_mut().context("metadata")?;
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            metadata.remove(field);
        }
    }
    let path = export.with_extension("restore.yaml");
    std::fs::write(&path, serde_norway::to_string(&list)?)?;
    Ok(path)
}

/// Every object of the installer on the edge that names one of `uids` as its Workspace.
async fn left_on_edge(edge: &Client, uids: &[String]) -> anyhow::Result<Vec<String>> {
    async fn named<K>(edge: &Client, selector: &str) -> anyhow::Result<Vec<String>>
    where
        K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let list = Api::<K>::all(edge.clone())
            .list_metadata(&ListParams::default().labels(selector))
            .await?;
        Ok(list
            .items
            .iter()
            .map(|o| {
                format!(
                    "{} {}/{}",
                    K::kind(&()),
                    o.namespace().unwrap_or_default(),
                    o.name_any()
                )
            })
            .collect())
    }
    let mut left = Vec::new();
    for uid in uids {
        let selector = format!("{LABEL_UID}={uid}");
        left.extend(named::<Namespace>(edge, &selector).await?);
        left.extend(named::<ServiceAccount>(edge, &selector).await?);
        left.extend(named::<Role>(edge, &selector).await?);
        left.extend(named::<RoleBinding>(edge, &selector).await?);
        left.extend(named::<Secret>(edge, &selector).await?);
        left.extend(named::<Job>(edge, &selector).await?);
    }
    Ok(left)
}

#[tokio::test]
async fn a_hub_restored_from_a_backup_keeps_every_release_and_seals_it_again() -> anyhow::Result<()>
{
    let env = installer::environment(
        Path::new(env!("CARGO_BIN_EXE_providers-controlplane")),
        Options::default(),
    )
    .await?;
    let (hub_info, url) = (env.hub.clone(), env.repo.url.clone());
    let webhook =
        tokio::task::spawn_blocking(move || Webhook::start(&hub_info, &[url.as_str()])).await??;
    let admin = env.hub_admin().await?;
    platform::grant_install(&admin, "bob", installer::EDGE).await?;
    webhook.register(&env.hub).await?;
    publish(env, "restore-hello", "hello", &["0.1.0"]).await?;
    publish_shared(env).await?;
    let edge = env.edge_admin().await?;
    let workspaces = Api::<Workspace>::namespaced(admin.clone(), ORG);

    // Installed as they are before the hub is lost: `upgraded` twice (a kept plan), `shared`
    // once, in the namespace every organization's Workspace of its Recipe aims at.
    let mut controller = ControllerProcess::start(&env.hub, controller_options("before")).await?;
    install(env, "upgraded", "restore-hello", "one")?;
    install(env, "upgraded", "restore-hello", "two")?;
    install(env, "shared", SHARED, "mine")?;
    let releases = [
        ("upgraded", "org-a-restore-hello", "restore-hello", "two"),
        ("shared", SHARED, SHARED, "mine"),
    ];
    let mut before = BTreeMap::new();
    let mut old_uids = Vec::new();
    for (name, namespace, release, greeting) in releases {
        let ws = workspaces.get(name).await?;
        old_uids.push(ws.uid().unwrap_or_default());
        let state = on_edge(&edge, namespace, release).await?;
        ensure!(state.greeting == greeting, "{name}: {state:?}");
        before.insert(name, state);
    }
    ensure!(
        status_of(&workspaces.get("upgraded").await?).attempts.len() == 2,
        "upgraded has a history of two attempts"
    );

    // The backup, as an operator takes it.
    let dir = tempfile::tempdir()?;
    let backup_workspaces = export(env, "workspaces.providers.platform.dev", dir.path())?;
    let backup_values = export(env, "planvalues.providers.platform.dev", dir.path())?;

    // The hub is lost: the installer is not running, the objects go without their cleanup.
    controller.kill();
    for ws in workspaces.list(&ListParams::default()).await? {
        let name = ws.name_any();
        workspaces
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await?;
        workspaces.delete(&name, &Default::default()).await?;
    }
    let values_api = Api::<PlanValues>::namespaced(admin.clone(), ORG);
    values_api
        .delete_collection(&Default::default(), &ListParams::default())
        .await?;
    installer::eventually(
        "the hub's Workspaces are gone",
        Duration::from_secs(30),
        || async {
            Ok(workspaces
                .list(&ListParams::default())
                .await?
                .items
                .is_empty()
                .then_some(()))
        },
    )
    .await?;

    // The restore, as the platform admin: values first, then the Workspaces, plans and all.
    let platform_admin = env.hub.kubeconfig(User::PlatformAdmin);
    kubectl::ok(
        platform_admin,
        &[
            "apply",
            "-f",
            restorable(&backup_values)?.to_str().context("path")?,
        ],
    )?;
    let applied = kubectl::run(
        platform_admin,
        &[
            "apply",
            "-f",
            restorable(&backup_workspaces)?.to_str().context("path")?,
        ],
    )?;
    ensure!(
        applied.status.success(),
        "applying the backup is admitted: {}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let said = String::from_utf8_lossy(&applied.stderr);
    ensure!(
        said.matches("spec.plan: the plan this create carries was not used")
            .count()
            == 2,
        "kubectl shows, for each Workspace, that its carried plan was replaced: {said}"
    );
    let backup: Value = serde_norway::from_str(&std::fs::read_to_string(&backup_workspaces)?)?;
    let carried_plan = |name: &str| -> anyhow::Result<Value> {
        backup["items"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["metadata"]["name"] == name))
            .map(|i| i["spec"]["plan"].clone())
            .context("the backup holds the Workspace")
    };

    // Sealed again, for the new Workspace, by the restoring user: attempt 1, bound to no
    // UID yet (the installer binds the new one), never the carried plan.
    for (name, _, _, _) in releases {
        let ws = workspaces.get(name).await?;
        let plan = &ws.spec.plan.as_ref().context("a plan")?.plan;
        let carried = carried_plan(name)?;
        ensure!(plan.attempt == 1, "{name}: {plan:?}");
        ensure!(plan.workspace.uid.is_empty(), "{name}: {plan:?}");
        ensure!(
            plan.owner.username == "platform-admin",
            "{name}: {:?}",
            plan.owner
        );
        ensure!(
            carried["attemptID"].as_str() != Some(plan.attempt_id.as_str()),
            "{name}: the carried plan is not what is stored"
        );
        // The values it refers to belong to no Workspace of another UID: a garbage collector
        // would otherwise delete them with the old owner.
        let digest = plan.values_digest.as_deref().context("values by digest")?;
        let values = values_api
            .get(&providers_shared::plan_values::object_name(name, digest))
            .await?;
        ensure!(
            values.owner_references().is_empty(),
            "{name}: the restored values still name their old owner: {:?}",
            values.owner_references()
        );
    }

    // Another organization's tenant, with a Workspace of the same name, carrying the
    // backup's plan, aims at the restored release's namespace.
    let theirs: Value = carried_plan("shared").map(|plan| {
        json!({
            "apiVersion": "providers.platform.dev/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": "shared", "namespace": "org-b"},
            "spec": {"recipe": SHARED, "edge": "edge-1", "values": {"greeting": "bob's"}, "plan": plan},
        })
    })?;
    let bob_file = dir.path().join("bob.yaml");
    std::fs::write(&bob_file, serde_norway::to_string(&theirs)?)?;
    kubectl::ok(
        env.hub.kubeconfig(User::Bob),
        &["create", "-f", bob_file.to_str().context("path")?],
    )?;
    let bobs = Api::<Workspace>::namespaced(admin.clone(), "org-b");
    let bob_plan = bobs.get("shared").await?.spec.plan.context("a plan")?.plan;
    ensure!(
        bob_plan.org == "org-b"
            && bob_plan.workspace.namespace == "org-b"
            && bob_plan.owner.username == "bob",
        "bob's Workspace is sealed for bob in org-b, not from the carried plan: {bob_plan:?}"
    );

    // The garbage collector of a real hub deletes an object all of whose owners are gone
    // (the test control plane runs none): what it would delete goes now.
    let live: Vec<String> = Api::<Workspace>::all(admin.clone())
        .list_metadata(&ListParams::default())
        .await?
        .items
        .iter()
        .filter_map(|w| w.metadata.uid.clone())
        .collect();
    for values in values_api.list_metadata(&ListParams::default()).await? {
        let owners = values.owner_references();
        if !owners.is_empty() && owners.iter().all(|o| !live.contains(&o.uid)) {
            values_api
                .delete(&values.name_any(), &Default::default())
                .await?;
        }
    }

    // The installer starts again.
    let started = std::time::Instant::now();
    let _controller = ControllerProcess::start(&env.hub, controller_options("after")).await?;
    for (name, namespace, release, greeting) in releases {
        let waited = wait_workspace(&admin, ORG, name, "the restored attempt installed", |ws| {
            status_of(ws).attempt == Some(1)
                && has_condition(ws, "Ready", "True", "Installed")
                && has_condition(ws, "Drifted", "False", "ReleaseInSync")
        })
        .await;
        let Ok(ws) = waited else {
            let now = workspaces.get(name).await?;
            bail!(
                "{name}: {:?}; Ready now: {:?}",
                waited.err(),
                installer::condition(&now, "Ready")
            );
        };
        eprintln!(
            "{name}: installed again {:.1} s after the installer started",
            started.elapsed().as_secs_f64()
        );
        let uid = ws.uid().unwrap_or_default();
        ensure!(
            status_of(&ws).workspace_uid.as_deref() == Some(uid.as_str()),
            "{name}: the attempt is bound to the new UID"
        );
        let reasons = installer::event_reasons(&admin, &ws).await?;
        ensure!(
            reasons.iter().any(|r| r == "NamespaceAdopted"),
            "{name}: the namespace the sweep released is adopted: {reasons:?}"
        );
        let after = on_edge(&edge, namespace, release).await?;
        let was = &before[name];
        ensure!(
            after.revision == was.revision + 1,
            "{name}: the release is upgraded in place, not installed from scratch: {was:?} then {after:?}"
        );
        ensure!(
            after.namespace_uid == was.namespace_uid && after.configmap_uid == was.configmap_uid,
            "{name}: the same namespace and objects: {was:?} then {after:?}"
        );
        ensure!(after.greeting == greeting, "{name}: {after:?}");
        let ns = Api::<Namespace>::all(edge.clone()).get(namespace).await?;
        ensure!(
            ns.labels().get(LABEL_UID) == Some(&uid)
                && !ns.labels().contains_key("providers.platform.dev/released"),
            "{name}: the namespace is the restored Workspace's: {:?}",
            ns.labels()
        );
        let digest = ws
            .spec
            .plan
            .as_ref()
            .and_then(|p| p.plan.values_digest.clone());
        let values = values_api
            .get(&providers_shared::plan_values::object_name(
                name,
                &digest.unwrap_or_default(),
            ))
            .await?;
        let owners: Vec<String> = values
            .owner_references()
            .iter()
            .map(|o| o.uid.clone())
            .collect();
        ensure!(
            owners == vec![uid.clone()],
            "{name}: values owned by the new UID only: {owners:?}"
        );
    }

    // Bob's Workspace never got the namespace, and the release is as the restore left it.
    let bob = wait_workspace(&admin, "org-b", "shared", "bob's attempt refused", |ws| {
        has_condition(ws, "Ready", "False", "NamespaceNotAdmitted")
    })
    .await?;
    ensure!(
        status_of(&bob).job_result == Some(providers_shared::api::JobResult::Rejected),
        "{:?}",
        status_of(&bob)
    );
    let shared_now = on_edge(&edge, SHARED, SHARED).await?;
    ensure!(shared_now.revision == before["shared"].revision + 1 && shared_now.greeting == "mine");

    // Nothing of the old UIDs stays on the edge.
    let left = installer::eventually(
        "the old UIDs' objects are gone",
        Duration::from_secs(60),
        || async {
            Ok(left_on_edge(&edge, &old_uids)
                .await?
                .is_empty()
                .then_some(()))
        },
    )
    .await;
    if left.is_err() {
        bail!(
            "left on the edge for the old Workspace UIDs: {:?}",
            left_on_edge(&edge, &old_uids).await?
        );
    }
    Ok(())
}
