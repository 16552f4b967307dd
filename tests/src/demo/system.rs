//! Everything the demo runs, started in order and stopped on drop.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

use anyhow::Context;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use providers_shared::api::{ChartRef, ExecutionRule, Recipe, RecipeSpec, ValueField, ValueType};
use serde_json::json;

use crate::{
    ControlPlane, ControlPlaneInfo, User, binaries, chartrepo::ChartRepo, installer,
    jobrunner::JobRunner, platform, ports::free_port, webhook::Webhook,
};

/// The charts the demo's repository serves at start: `hello` 0.1.0 and 0.2.0. Version
/// 0.3.0 is announced by the `hello-next` Recipe but published only during the session.
pub const CHARTS: &[(&str, &[&str])] = &[("hello", &["0.1.0", "0.2.0"])];

pub struct System {
    pub hub: ControlPlaneInfo,
    pub edge: ControlPlaneInfo,
    pub repo: ChartRepo,
    pub dir: PathBuf,
    /// The webhook's and the installer's `/metrics` (OpenMetrics, plain HTTP).
    pub webhook_metrics: String,
    pub installer_metrics: String,
    controller: Option<Child>,
    runner: JobRunner,
    _webhook: Webhook,
    planes: Vec<ControlPlane>,
}

impl System {
    pub async fn start(dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        eprintln!("starting the hub and edge control planes (etcd + kube-apiserver each)");
        let (hub_dir, edge_dir) = (dir.join("hub"), dir.join("edge-1"));
        let (hub, edge) = tokio::try_join!(
            ControlPlane::launch(&hub_dir, "hub"),
            ControlPlane::launch(&edge_dir, "edge-1")
        )?;
        let (hub_info, edge_info) = (hub.info.clone(), edge.info.clone());
        let repo = ChartRepo::start(CHARTS).await?;
        eprintln!("chart repository serving at {}", repo.url);

        let (setup_hub, repo_url) = (hub_info.clone(), repo.url.clone());
        let webhook = tokio::task::spawn_blocking(move || -> anyhow::Result<Webhook> {
            platform::install(&setup_hub)?;
            Webhook::start(&setup_hub, &[&repo_url])
        })
        .await??;
        webhook.register(&hub_info).await?;
        eprintln!(
            "webhook serving on https://127.0.0.1:{} (sealing key {})",
            webhook.port, webhook.key_id
        );

        let runner = JobRunner::start(&edge_info).await?;
        installer::register_edge(
            &hub_info,
            &edge_info,
            "edge-1",
            "cluster-edge-1",
            EDGE_WORKSPACE,
            None,
        )
        .await?;
        installer::register_edge(
            &hub_info,
            &edge_info,
            "edge-2",
            "cluster-edge-2",
            EDGE_WORKSPACE,
            None,
        )
        .await?;
        let admin = hub_info.client(User::PlatformAdmin).await?;
        for recipe in recipes(&repo.url) {
            let name = recipe.metadata.name.clone().context("recipe name")?;
            Api::<Recipe>::all(admin.clone())
                .patch(
                    &name,
                    &PatchParams::apply("platform").force(),
                    &Patch::Apply(&recipe),
                )
                .await?;
        }
        platform::grant_install(&admin, "alice", "edge-1").await?;
        platform::grant_install(&admin, "bob", "edge-1").await?;

        let metrics_port = free_port()?;
        let controller = start_controller(&hub_info, &dir, metrics_port).await?;
        eprintln!(
            "installer controller running (log: {})",
            dir.join("controller.log").display()
        );
        Ok(Self {
            hub: hub_info,
            edge: edge_info,
            repo,
            dir,
            webhook_metrics: format!("http://127.0.0.1:{}/metrics", webhook.admin_port),
            installer_metrics: format!("http://127.0.0.1:{metrics_port}/metrics"),
            controller: Some(controller),
            runner,
            _webhook: webhook,
            planes: vec![hub, edge],
        })
    }

    /// Stops every process and waits for the control planes to exit. The job runner
    /// first: it watches the edge's Jobs and would report the API server going away.
    pub async fn stop(mut self) {
        self.runner.stop().await;
        if let Some(mut controller) = self.controller.take() {
            let _ = controller.kill();
            let _ = controller.wait();
        }
        for plane in self.planes.drain(..) {
            plane.shutdown().await;
        }
    }
}

impl Drop for System {
    fn drop(&mut self) {
        if let Some(mut controller) = self.controller.take() {
            let _ = controller.kill();
            let _ = controller.wait();
        }
    }
}

const EDGE_WORKSPACE: &str = "8c6b7c1e-0000-4000-8000-000000000001";

fn recipes(repository: &str) -> Vec<Recipe> {
    let recipe = |name: &str, versions: &[&str]| {
        Recipe::new(
            name,
            RecipeSpec {
                drift: None,
                chart: ChartRef {
                    repository: repository.into(),
                    name: "hello".into(),
                },
                versions: versions.iter().map(|v| (*v).to_owned()).collect(),
                // The defaults: namespace {org}-{recipe}, release {recipe}.
                namespace: None,
                release: None,
                values: Some(json!({"greeting": "hello", "hub": {"credentialSecret": ""}})),
                values_schema: vec![ValueField {
                    path: "greeting".into(),
                    type_: ValueType::String,
                    description: Some("What the provider says".into()),
                    enum_: None,
                    pattern: None,
                    max_length: Some(64),
                    minimum: None,
                    maximum: None,
                }],
                execution: vec![ExecutionRule {
                    api_groups: vec![String::new()],
                    resources: vec!["configmaps".into()],
                    verbs: [
                        "get", "list", "watch", "create", "update", "patch", "delete",
                    ]
                    .map(String::from)
                    .to_vec(),
                }],
                runtime_credential: None,
            },
        )
    };
    vec![
        recipe("hello", &["0.2.0", "0.1.0"]),
        recipe("hello-next", &["0.3.0"]),
    ]
}

/// `providers-webhook controller` as its shipped ServiceAccount and mode
/// (manifests/controller/), logging to the demo folder.
async fn start_controller(
    hub: &ControlPlaneInfo,
    dir: &Path,
    metrics_port: u16,
) -> anyhow::Result<Child> {
    let kubeconfig = installer::controller_kubeconfig(hub, dir).await?;
    let log = std::fs::File::create(dir.join("controller.log"))?;
    Command::new(binaries::cargo_bin("providers-webhook")?)
        .arg("controller")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "--namespace",
            "providers-system",
            "--identity",
            "demo-controller",
        ])
        .args(["--metrics-listen", &format!("127.0.0.1:{metrics_port}")])
        .args(["--hub-server", &hub.server])
        // As shipped (manifests/controller), a sharing replica; here the only one, so it
        // holds both edges' Leases and leads the hub-wide duties.
        .env("RUST_LOG", "info,kube=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("starting the installer controller")
}
