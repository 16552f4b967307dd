//! The dashboard and the alerts against a real Prometheus scraping the demo.
//!
//! Starts the demo's system (hub and edge control planes, the webhook, the installer, the
//! job runner, a chart repository) and Prometheus (built from the
//! github.com/prometheus/prometheus module by `tests/monitoring/build.sh prometheus`)
//! scraping the webhook's and the installer's `/metrics` every 2 s with
//! manifests/monitoring/rules.yaml loaded, then runs the demo's scripted tenant session
//! (installs, a refusal, a failed attempt and its retry, drift and repair, an upgrade and a
//! rollback). Then it makes two things go wrong: an attempt the installer refuses (its
//! release namespace belongs to another Workspace) and an Edge whose API server does not
//! answer. It waits for the two to make ProvidersWorkspacesFailed and
//! ProvidersEdgeUnreachable pending, then evaluates every query of
//! manifests/monitoring/dashboard.json and every alert's expression through the HTTP API
//! and prints each with the series it returned. It fails if a dashboard query returns an
//! error or no series, or if either alert is not pending.
//!
//!   bash tests/monitoring/build.sh promtool prometheus
//!   cargo build --release --workspace --bins
//!   cargo bench -p providers-tests --bench monitoring_eval
//!
//! docs/operations.md ("Checking the dashboard and the alerts against a real Prometheus")
//! records a run.

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use providers_tests::{User, binaries, demo, installer, ports::free_port};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Prometheus, stopped on drop.
struct Prometheus {
    child: Child,
    port: u16,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Prometheus {
    /// GET `path` of Prometheus's HTTP API; its JSON body.
    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await?;
        stream
            .write_all(
                format!(
                    "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n\r\n",
                    self.port
                )
                .as_bytes(),
            )
            .await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        let text = String::from_utf8_lossy(&response);
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, body)| body)
            .context("an HTTP response without a body")?;
        serde_json::from_str(body).with_context(|| format!("GET {path}: {body}"))
    }

    /// An instant query: its result (a vector's series).
    async fn query(&self, expr: &str) -> anyhow::Result<Vec<Value>> {
        let answer = self
            .get(&format!("/api/v1/query?query={}", percent_encode(expr)))
            .await?;
        if answer["status"] != "success" {
            bail!("{expr}: {answer}");
        }
        match answer["data"]["resultType"].as_str() {
            Some("vector") => Ok(answer["data"]["result"]
                .as_array()
                .cloned()
                .unwrap_or_default()),
            other => bail!("{expr}: a {other:?}, not an instant vector"),
        }
    }

    /// Alerts pending or firing: (name, state, labels).
    async fn alerts(&self) -> anyhow::Result<Vec<(String, String, Value)>> {
        let answer = self.get("/api/v1/alerts").await?;
        Ok(answer["data"]["alerts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|a| {
                (
                    a["labels"]["alertname"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    a["state"].as_str().unwrap_or_default().to_owned(),
                    a["labels"].clone(),
                )
            })
            .collect())
    }
}

/// One series as `{label="value",...} value`, without the metric name.
fn show(series: &Value) -> String {
    let labels: Vec<String> = series["metric"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| *k != "__name__" && *k != "job")
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    format!(
        "{{{}}} {}",
        labels.join(","),
        series["value"][1].as_str().unwrap_or_default()
    )
}

fn start_prometheus(
    dir: &std::path::Path,
    webhook: &str,
    installer: &str,
) -> anyhow::Result<Prometheus> {
    let root = binaries::workspace_root()?;
    let bin = root.join("target/monitoring/bin/prometheus");
    if !bin.exists() {
        bail!(
            "{} is missing: run `bash tests/monitoring/build.sh promtool prometheus` first",
            bin.display()
        );
    }
    let target = |url: &str| -> anyhow::Result<(String, String)> {
        let rest = url.strip_prefix("http://").context("an http:// URL")?;
        let (host, path) = rest.split_once('/').context("a path")?;
        Ok((host.to_owned(), format!("/{path}")))
    };
    let (webhook_host, webhook_path) = target(webhook)?;
    let (installer_host, installer_path) = target(installer)?;
    let config = json!({
        "global": {"scrape_interval": "2s", "evaluation_interval": "2s"},
        "rule_files": [root.join("manifests/monitoring/rules.yaml")],
        "scrape_configs": [
            {"job_name": "providers-webhook", "metrics_path": webhook_path,
             "static_configs": [{"targets": [webhook_host]}]},
            {"job_name": "providers-controller", "metrics_path": installer_path,
             "static_configs": [{"targets": [installer_host]}]},
        ],
    });
    let config_file = dir.join("prometheus.yml");
    std::fs::write(&config_file, serde_json::to_string_pretty(&config)?)?;
    let port = free_port()?;
    let log = std::fs::File::create(dir.join("prometheus.log"))?;
    let child = Command::new(&bin)
        .arg(format!("--config.file={}", config_file.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("starting prometheus")?;
    Ok(Prometheus { child, port })
}

/// Runs `kubectl provider args` as alice; whether it succeeded, and what it said.
fn alice(system: &demo::System, args: &[&str]) -> anyhow::Result<(bool, String)> {
    let debug = binaries::cargo_bin("kubectl-provider")?;
    let path = format!(
        "{}:{}:{}",
        debug.parent().context("target/debug")?.display(),
        binaries::dir()?.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("kubectl")
        .arg("provider")
        .args(args)
        .env("KUBECONFIG", system.hub.kubeconfig(User::Alice))
        .env("PATH", path)
        .env(
            "HELM_CACHE_HOME",
            std::env::temp_dir().join("providers-demo-helm"),
        )
        .output()?;
    Ok((
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("providers-monitoring-")
        .tempdir()?;
    let root = binaries::workspace_root()?;
    let system = demo::System::start(&dir.path().join("demo")).await?;
    let outcome = evaluate(&system, dir.path(), &root).await;
    system.stop().await;
    if outcome.is_err() {
        // Prometheus's and the demo's logs tell why.
        let kept = dir.keep();
        eprintln!("logs kept in {}", kept.display());
    }
    outcome
}

async fn evaluate(
    system: &demo::System,
    dir: &std::path::Path,
    root: &std::path::Path,
) -> anyhow::Result<()> {
    println!("webhook metrics:   {}", system.webhook_metrics);
    println!("installer metrics: {}", system.installer_metrics);
    // Prometheus scrapes the whole session: its reviews, attempts, drift and repairs.
    let prometheus = start_prometheus(dir, &system.webhook_metrics, &system.installer_metrics)?;
    let started = Instant::now();
    demo::session::run(system).await?;
    println!(
        "\nthe demo's scripted session ran in {:.0} s",
        started.elapsed().as_secs_f64()
    );

    // What goes wrong: an attempt the installer refuses (the Recipe's release namespace,
    // org-a-hello-next, belongs to the session's Workspace canary), and an Edge at an
    // address nothing answers.
    let (ok, said) = alice(
        system,
        &[
            "install",
            "broken",
            "--recipe",
            "hello-next",
            "--edge",
            "edge-1",
            "--wait",
            "--timeout",
            "180s",
        ],
    )?;
    println!("\nalice installs hello-next again, as broken:");
    for line in said.lines().take(6) {
        println!("  {line}");
    }
    if ok {
        bail!("the second install of hello-next into the same namespace succeeded");
    }
    installer::register_edge(
        &system.hub,
        &system.edge,
        "edge-3",
        "cluster-edge-3",
        "8c6b7c1e-0000-4000-8000-000000000003",
        Some("https://127.0.0.1:1"),
    )
    .await?;
    println!("the Edge edge-3 is registered at https://127.0.0.1:1, where nothing answers");

    // Both alerts pending, within two minutes.
    let deadline = Instant::now() + Duration::from_secs(120);
    let wanted = [
        ("ProvidersWorkspacesFailed", "edge", "edge-1"),
        ("ProvidersEdgeUnreachable", "edge", "edge-3"),
    ];
    let alerts = loop {
        let alerts = prometheus.alerts().await.unwrap_or_default();
        let all = wanted.iter().all(|(name, label, value)| {
            alerts.iter().any(|(n, state, labels)| {
                n == name && state == "pending" && labels[label] == *value
            })
        });
        if all || Instant::now() > deadline {
            break alerts;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };

    // Rates need two samples or more in their window: 15 scrapes of each target first.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let scrapes = prometheus
            .query("min(count_over_time(up[5m]))")
            .await
            .ok()
            .and_then(|s| s.first()?["value"][1].as_str()?.parse::<f64>().ok())
            .unwrap_or(0.0);
        if scrapes >= 15.0 || Instant::now() > deadline {
            println!("\nevaluated after {scrapes} scrapes of each target");
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let alerts = prometheus.alerts().await.unwrap_or(alerts);

    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(
        root.join("manifests/monitoring/dashboard.json"),
    )?)?;
    let mut failures = Vec::new();
    println!(
        "\n## Dashboard queries ({} panels)\n",
        dashboard["panels"]
            .as_array()
            .map_or(0, |p| p.iter().filter(|p| p["type"] != "row").count())
    );
    for panel in dashboard["panels"].as_array().context("panels")? {
        let Some(targets) = panel["targets"].as_array() else {
            continue;
        };
        println!("{}", panel["title"].as_str().unwrap_or_default());
        for target in targets {
            let expr = target["expr"].as_str().context("expr")?;
            match prometheus.query(expr).await {
                Ok(series) if series.is_empty() => {
                    println!("  NO DATA  {expr}");
                    failures.push(format!("no data: {expr}"));
                }
                Ok(series) => {
                    let shown: Vec<String> = series.iter().take(4).map(show).collect();
                    let more = if series.len() > 4 {
                        format!(" (+{})", series.len() - 4)
                    } else {
                        String::new()
                    };
                    println!("  {} series  {}{more}", series.len(), shown.join("  "));
                }
                Err(error) => {
                    println!("  ERROR  {error:#}");
                    failures.push(format!("{error:#}"));
                }
            }
        }
    }

    println!("\n## Alert expressions\n");
    let rules: Value = serde_norway::from_str(&std::fs::read_to_string(
        root.join("manifests/monitoring/rules.yaml"),
    )?)?;
    for group in rules["groups"].as_array().context("groups")? {
        for rule in group["rules"].as_array().context("rules")? {
            let name = rule["alert"].as_str().unwrap_or_default();
            let severity = rule["labels"]["severity"].as_str().unwrap_or_default();
            let expr = rule["expr"].as_str().context("expr")?;
            match prometheus.query(expr).await {
                Ok(series) => println!(
                    "{name} ({severity}): {} series {}",
                    series.len(),
                    series.iter().map(show).collect::<Vec<_>>().join("  ")
                ),
                Err(error) => {
                    println!("{name}: ERROR {error:#}");
                    failures.push(format!("{name}: {error:#}"));
                }
            }
        }
    }

    println!("\n## Alerts pending or firing\n");
    for (name, state, labels) in &alerts {
        println!("{name} {state} {}", labels);
    }
    for (name, label, value) in wanted {
        if !alerts
            .iter()
            .any(|(n, state, labels)| n == name && state == "pending" && labels[label] == value)
        {
            failures.push(format!("{name} is not pending for {label}={value}"));
        }
    }
    if failures.is_empty() {
        println!("\nevery dashboard query returned data; both alerts are pending");
        Ok(())
    } else {
        bail!("{}", failures.join("\n"))
    }
}
