//! The whole system on a hub and an edge: the installer environment (hub and edge control
//! planes, chart repository, job runner) with the real webhook registered and one
//! supervised installer for every Workspace, shared by the tests of one test binary.
//!
//! Tests that need the webhook's sealing and the installer together (tenancy, GitOps
//! engines) start from [`shared`]; each publishes Recipes of its own with [`publish`], so
//! tests in one binary never share a release namespace.

use std::path::Path;

use k8s_openapi::api::batch::v1::Job;
use kube::{
    Api, ResourceExt,
    api::{ListParams, Patch, PatchParams},
};
use providers_shared::api::{
    ChartRef, Recipe, RecipeSpec, ValueField, ValueType, Workspace, WorkspaceIdentity,
};
use serde_json::json;
use tokio::sync::OnceCell;

use crate::{
    installer::{self, ControllerOptions, ControllerProcess, Environment, Options},
    platform,
    webhook::Webhook,
};

pub struct System {
    pub env: &'static Environment,
    _webhook: Webhook,
    controller: ControllerProcess,
}

impl System {
    /// What the system shows of a Workspace's attempt, for a failure message: its status
    /// on the hub, its Jobs on the edge with what the job runner did, and the installer's
    /// last log lines. A failing wait then says which part stopped.
    pub async fn diagnose(&self, namespace: &str, name: &str) -> String {
        let mut out = String::new();
        let status = match self.env.hub_admin().await {
            Ok(hub) => match Api::<Workspace>::namespaced(hub, namespace)
                .get_opt(name)
                .await
            {
                Ok(ws) => serde_json::to_string_pretty(&ws.map(|w| w.status)).unwrap_or_default(),
                Err(error) => format!("cannot read it: {error}"),
            },
            Err(error) => format!("no hub client: {error}"),
        };
        out.push_str(&format!("Workspace {namespace}/{name} status: {status}\n"));
        if let Ok(edge) = self.env.edge_admin().await {
            let jobs = Api::<Job>::all(edge)
                .list(&ListParams::default().labels(crate::jobrunner::SELECTOR))
                .await;
            for job in jobs.map(|l| l.items).unwrap_or_default() {
                let (ns, job_name) = (job.namespace().unwrap_or_default(), job.name_any());
                let run = self.env.runner.run(&ns, &job_name);
                out.push_str(&format!(
                    "Job {ns}/{job_name}: status {}; runner: {run:?}\n",
                    serde_json::to_string(&job.status).unwrap_or_default(),
                ));
            }
        }
        out.push_str("installer log:\n");
        out.push_str(&self.controller.log_tail());
        out
    }
}

/// The system of this test binary, started on first use: the installer environment with
/// the webhook registered, one installer for every Workspace, and bob granted edge-1 too.
/// `controlplane` is the test's `providers-controlplane` binary.
pub async fn shared(controlplane: &Path) -> anyhow::Result<&'static System> {
    shared_with(controlplane, &[]).await
}

/// [`shared`], its installer started with `args` besides the suite's: the first call in a
/// test binary decides them.
pub async fn shared_with(controlplane: &Path, args: &[&str]) -> anyhow::Result<&'static System> {
    static SYSTEM: OnceCell<System> = OnceCell::const_new();
    SYSTEM
        .get_or_try_init(|| async {
            let env = installer::environment(controlplane, Options::default()).await?;
            let (hub, url) = (env.hub.clone(), env.repo.url.clone());
            let webhook =
                tokio::task::spawn_blocking(move || Webhook::start(&hub, &[url.as_str()]))
                    .await??;
            platform::grant_install(&env.hub_admin().await?, "bob", installer::EDGE).await?;
            webhook.register(&env.hub).await?;
            let controller = env
                .controller(ControllerOptions {
                    // PlanValues stored for writes the API server refused go within seconds.
                    args: [
                        "--plan-values-grace",
                        "5",
                        "--plan-values-sweep-interval",
                        "2",
                    ]
                    .iter()
                    .chain(args)
                    .map(|a| a.to_string())
                    .collect(),
                    ..ControllerOptions::new("", "system-0", "lease-system").supervised()
                })
                .await?;
            Ok(System {
                env,
                _webhook: webhook,
                controller,
            })
        })
        .await
}

/// Publishes the Recipe `name` of `chart` at `versions`, with the default namespace and
/// release (`{org}-{recipe}`, `{recipe}`) and one string value, `greeting`. An
/// organization's Workspaces of one Recipe on one edge share a namespace, so each test
/// publishes Recipes of its own.
pub async fn publish(
    env: &Environment,
    name: &str,
    chart: &str,
    versions: &[&str],
) -> anyhow::Result<()> {
    publish_with_defaults(
        env,
        name,
        chart,
        versions,
        json!({"hub": {"credentialSecret": ""}}),
    )
    .await
}

/// [`publish`], with `defaults` as the Recipe's `spec.values`.
pub async fn publish_with_defaults(
    env: &Environment,
    name: &str,
    chart: &str,
    versions: &[&str],
    defaults: serde_json::Value,
) -> anyhow::Result<()> {
    let mut recipe = greeting_recipe(name, &env.repo.url, chart, versions);
    recipe.spec.values = Some(defaults);
    apply_recipe(&env.hub_admin().await?, &recipe).await
}

/// The Recipe `name` of `chart` from `repository` at `versions` that the tests publish:
/// the default namespace and release, the hub credential off, one string value
/// `greeting`, and its runner allowed ConfigMaps.
pub fn greeting_recipe(name: &str, repository: &str, chart: &str, versions: &[&str]) -> Recipe {
    Recipe::new(
        name,
        RecipeSpec {
            drift: None,
            chart: ChartRef {
                repository: repository.into(),
                name: chart.into(),
            },
            versions: versions.iter().map(|v| (*v).to_owned()).collect(),
            namespace: None,
            release: None,
            values: Some(json!({"hub": {"credentialSecret": ""}})),
            values_schema: vec![ValueField {
                path: "greeting".into(),
                type_: ValueType::String,
                description: None,
                enum_: None,
                pattern: None,
                max_length: Some(64),
                minimum: None,
                maximum: None,
            }],
            execution: vec![installer::rule("", "configmaps")],
            runtime_credential: None,
        },
    )
}

/// Applies `recipe` as the platform does (server-side, field manager `platform`).
pub async fn apply_recipe(admin: &kube::Client, recipe: &Recipe) -> anyhow::Result<()> {
    Api::<Recipe>::all(admin.clone())
        .patch(
            &recipe.name_any(),
            &PatchParams::apply("platform").force(),
            &Patch::Apply(recipe),
        )
        .await?;
    Ok(())
}

/// About 300 KB of Recipe defaults in 7,350 keys: the components of a monitoring stack,
/// the weight of a large chart's values.
pub fn heavy_defaults() -> serde_json::Value {
    let components: serde_json::Map<String, serde_json::Value> = (0..1050)
        .map(|i| {
            (
                format!("component-{i:04}"),
                json!({
                    "image": format!("registry.example/platform/component-{i:04}:v1.{i}.0"),
                    "replicas": 1 + i % 3,
                    "cpu": "100m",
                    "memory": "128Mi",
                    "logLevel": "info",
                    "annotation": "managed-by-the-platform-team-with-a-long-value",
                    "description": "one of the thousand parts of the platform's monitoring stack, on every edge",
                }),
            )
        })
        .collect();
    json!({"hub": {"credentialSecret": ""}, "components": components})
}

/// Waits until attempt `attempt` of `org-a/name` is installed: Ready, and its release in
/// sync.
pub async fn installed(
    hub: &kube::Client,
    name: &str,
    attempt: i64,
) -> anyhow::Result<providers_shared::api::Workspace> {
    installer::wait_workspace(
        hub,
        "org-a",
        name,
        &format!("attempt {attempt} installed"),
        |ws| {
            installer::status_of(ws).attempt == Some(attempt)
                && installer::has_condition(ws, "Ready", "True", "Installed")
                && installer::has_condition(ws, "Drifted", "False", "ReleaseInSync")
        },
    )
    .await
}

/// The Job name of attempt 1 of `org/name` for `release`, known before it exists, so the
/// runner can hold it.
pub fn first_job(org: &str, name: &str, release: &str) -> String {
    let identity = WorkspaceIdentity {
        namespace: org.into(),
        name: name.into(),
        uid: String::new(),
    };
    providers_shared::plan::job_name(&identity, release, 1)
}
