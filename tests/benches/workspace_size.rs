//! How much a Workspace weighs as its history grows, with small Recipe defaults and with
//! 300 KB of them (docs/performance.md, "Workspace size").
//!
//! The whole system (real webhook, installer, edge Jobs running the real helm): a tenant
//! installs a Workspace and changes one value again and again with `kubectl provider set
//! --wait`; after chosen attempts the Workspace is read as the API server serves it (its
//! JSON, managed fields included: what etcd holds) and its size printed. A change that is
//! refused is printed with its reason and ends that series.
//!
//!     cargo bench -p providers-tests --bench workspace_size
//!
//! Environment: PROVIDERS_SIZE_ATTEMPTS (20), PROVIDERS_SIZE_AT (1,5,20),
//! PROVIDERS_SIZE_SAVE (a folder: the stored Workspaces are saved there as
//! `<series>-<attempt>.json`, templates for tests/measure/status_write_cost.py).
//! Uses only what the API and the plugin offered before values were stored by digest (with
//! `heavy_defaults` and `publish_with_defaults` copied in), so it measures either design.

use std::{path::Path, time::Instant};

use anyhow::Context;
use kube::Client;
use providers_tests::{User, installer, plugin, system};
use serde_json::json;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn stored(hub: &Client, name: &str) -> anyhow::Result<String> {
    Ok(hub
        .request_text(
            http::Request::get(format!(
                "/apis/providers.platform.dev/v1alpha1/namespaces/org-a/workspaces/{name}"
            ))
            .body(Vec::new())?,
        )
        .await?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let attempts: i64 = env_or("PROVIDERS_SIZE_ATTEMPTS", 20);
    let at: Vec<i64> = std::env::var("PROVIDERS_SIZE_AT")
        .unwrap_or_else(|_| "1,5,20".into())
        .split(',')
        .filter_map(|a| a.trim().parse().ok())
        .collect();
    let save = std::env::var("PROVIDERS_SIZE_SAVE").ok();
    let system = system::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane"))).await?;
    let env = system.env;
    let hub = env.hub_admin().await?;
    let alice = env.hub.kubeconfig(User::Alice);
    for (series, defaults) in [
        ("small", json!({"hub": {"credentialSecret": ""}})),
        ("heavy", system::heavy_defaults()),
    ] {
        let recipe = format!("size-{series}");
        let defaults_bytes = defaults.to_string().len();
        system::publish_with_defaults(env, &recipe, "hello", &["0.1.0"], defaults).await?;
        let started = Instant::now();
        for attempt in 1..=attempts {
            let greeting = format!("greeting=v{attempt}");
            let run = if attempt == 1 {
                plugin::run(
                    alice,
                    &[
                        "install",
                        series,
                        "--recipe",
                        &recipe,
                        "--edge",
                        installer::EDGE,
                        "--set",
                        &greeting,
                        "--wait",
                        "--timeout",
                        "3m",
                    ],
                )?
            } else {
                plugin::run(
                    alice,
                    &[
                        "set",
                        series,
                        "--set",
                        &greeting,
                        "--wait",
                        "--timeout",
                        "3m",
                    ],
                )?
            };
            if run.code != 0 {
                println!(
                    "{series} (defaults {defaults_bytes} B): attempt {attempt} refused: {}",
                    run.stderr.trim()
                );
                let text = stored(&hub, series).await?;
                println!("{series}: stored size then: {} B", text.len());
                break;
            }
            if at.contains(&attempt) {
                let text = stored(&hub, series).await.context("reading it back")?;
                println!(
                    "{series} (defaults {defaults_bytes} B): after attempt {attempt}: {} B stored ({:.1} s)",
                    text.len(),
                    started.elapsed().as_secs_f64()
                );
                if let Some(folder) = &save {
                    std::fs::write(format!("{folder}/{series}-{attempt}.json"), &text)?;
                }
            }
        }
    }
    Ok(())
}
