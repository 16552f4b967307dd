//! The demo: a hub control plane with the CRDs, the admission webhook, a sample Recipe and
//! Edges, and tenants, left running for you to explore with kubectl until Ctrl-C.
use std::{path::PathBuf, time::Duration};

use clap::Parser;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use providers::api::{
    ChartRef, Edge, EdgeSpec, Recipe, RecipeSpec, SecretKeyRef, ValueField, ValueType,
};
use serde_json::json;
use testbed::{ControlPlane, User, platform, webhook::Webhook};

#[derive(Parser)]
#[command(about = "Run the sealed provider installs demo on a local control plane")]
struct Args {
    /// Where the control plane keeps its files.
    #[arg(long, default_value = ".demo")]
    dir: PathBuf,
    /// Write `KUBECONFIG_<USER>=path` lines here for scripts, then keep running.
    #[arg(long)]
    env_file: Option<PathBuf>,
}

const REPOSITORY: &str = "http://127.0.0.1:8879/charts";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _ = std::fs::remove_dir_all(&args.dir);
    eprintln!(
        "starting the hub control plane (etcd + kube-apiserver) in {}",
        args.dir.display()
    );
    let plane = ControlPlane::launch(&args.dir.join("hub"), "hub").await?;
    let info = plane.info.clone();
    let setup_info = info.clone();
    let webhook = tokio::task::spawn_blocking(move || -> anyhow::Result<Webhook> {
        platform::install(&setup_info)?;
        Webhook::start(&setup_info, &[REPOSITORY])
    })
    .await??;
    webhook.register(&info).await?;
    eprintln!(
        "webhook serving on https://127.0.0.1:{} (sealing key {})",
        webhook.port, webhook.key_id
    );

    let admin = info.client(User::PlatformAdmin).await?;
    let apply = PatchParams::apply("platform").force();
    let recipe = Recipe::new(
        "demo",
        RecipeSpec {
            chart: ChartRef {
                repository: REPOSITORY.into(),
                name: "demo".into(),
            },
            versions: vec!["0.2.0".into(), "0.1.0".into()],
            namespace: "demo".into(),
            release: "demo".into(),
            values: Some(json!({"replicaCount": 1, "greeting": "hello"})),
            values_schema: vec![ValueField {
                path: "replicaCount".into(),
                type_: ValueType::Integer,
                description: Some("How many replicas to run".into()),
                enum_: None,
                pattern: None,
                max_length: None,
                minimum: Some(1.0),
                maximum: Some(5.0),
            }],
            execution: vec![],
            runtime_credential: None,
        },
    );
    Api::<Recipe>::all(admin.clone())
        .patch("demo", &apply, &Patch::Apply(&recipe))
        .await?;
    for name in ["edge-1", "edge-2"] {
        let edge = Edge::new(
            name,
            EdgeSpec {
                cluster_id: format!("{name}-cluster"),
                workspace_uuid: "8c6b7c1e-0000-4000-8000-000000000001".into(),
                kubeconfig_secret_ref: SecretKeyRef {
                    namespace: "providers-system".into(),
                    name: format!("{name}-kubeconfig"),
                    key: "kubeconfig".into(),
                },
            },
        );
        Api::<Edge>::all(admin.clone())
            .patch(name, &apply, &Patch::Apply(&edge))
            .await?;
    }
    platform::grant_install(&admin, "alice", "edge-1").await?;

    println!("\nThe demo is up. alice may install onto edge-1 (not edge-2); bob onto none.");
    let mut env = String::new();
    for (user, path) in &info.kubeconfigs {
        println!("  {:<15} export KUBECONFIG={}", user.name(), path.display());
        env.push_str(&format!(
            "KUBECONFIG_{}={}\n",
            user.name().replace('-', "_").to_uppercase(),
            path.display()
        ));
    }
    println!(
        "\nTry, as alice:\n  kubectl apply -f tests/fixtures/workspace.yaml\n  kubectl get workspace demo -o yaml\n"
    );
    if let Some(path) = &args.env_file {
        std::fs::write(path, env)?;
    }
    println!("Ctrl-C stops everything.");
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = sigterm.recv() => {}
    }
    drop(webhook);
    plane.shutdown().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    std::fs::remove_dir_all(&args.dir).ok();
    Ok(())
}
