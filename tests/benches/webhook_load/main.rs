//! Load and latency of the real `providers-webhook serve` process.
//!
//! 1. HTTPS under load: a closed-loop generator (one thread) sends AdmissionReviews over
//!    keep-alive HTTP/1.1 and HTTP/2 connections on 127.0.0.1 and reports reviews/s,
//!    latency percentiles, CPU use and the webhook's resident memory.
//! 2. Through the API server: the latency of the same Workspace update with the webhooks
//!    registered, without them, and with a floor webhook that admits everything unread
//!    (over HTTP/2 and over HTTP/1.1): what any webhook under these configurations costs.
//!
//! Build the webhook in the same profile first, then run (on a shared machine, a lower nice
//! value keeps other people's work from competing; the control plane and the webhook
//! inherit it):
//!   cargo build --release -p providers-webhook
//!   nice -n -10 cargo bench -p providers-tests --bench webhook_load -- [--help]
#![forbid(unsafe_code)]

mod apiserver;
mod fixture;
mod floor;
mod loadgen;
mod procstat;
mod reviews;
mod stats;

use std::{path::Path, sync::Arc, time::Duration};

use anyhow::Context;
use clap::{Parser, ValueEnum};
use loadgen::{Load, Protocol, Target};
use procstat::{CpuUse, CpuWindow};
use stats::{Latencies, ms};

#[derive(Parser)]
#[command(about = "Load and latency of the admission webhook")]
struct Args {
    /// What to measure.
    #[arg(long, value_enum, default_value = "all")]
    only: Part,
    /// Measured seconds per load run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Unmeasured seconds at the start of each load run.
    #[arg(long, default_value_t = 2)]
    warmup_seconds: u64,
    /// At most this many measured requests per load run.
    #[arg(long, default_value_t = 2_000_000)]
    max_requests: u64,
    /// HTTP/1.1 keep-alive connections (one request in flight on each).
    #[arg(long, default_value_t = 8)]
    http1_connections: usize,
    /// HTTP/2 connections.
    #[arg(long, default_value_t = 2)]
    http2_connections: usize,
    /// Concurrent streams on each HTTP/2 connection.
    #[arg(long, default_value_t = 8)]
    http2_streams: usize,
    /// Also run every load with the webhook pinned to CPU 0 and the generator to CPU 1.
    #[arg(long)]
    pinned: bool,
    /// Measured updates of each kind per block (through the API server).
    #[arg(long, default_value_t = 100)]
    updates: usize,
    /// Rounds of blocks through the API server: the webhooks, none, then the floor over h2
    /// and over HTTP/1.1. Short blocks in many rounds keep the machine's drift out of the
    /// ratios.
    #[arg(long, default_value_t = 8)]
    rounds: usize,
    /// Write each scenario's AdmissionReview body to this folder (to replay it with curl).
    #[arg(long)]
    dump_reviews: Option<std::path::PathBuf>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Part {
    All,
    Load,
    Apiserver,
}

// One thread: the generator competes with the webhook for the same 2 cores, and a single
// thread takes at most one of them.
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let ticks = procstat::clock_ticks()?;
    println!("# webhook_load");
    println!("machine: {}", procstat::describe_machine());
    println!("load average at start: {}", procstat::load_average());
    println!(
        "nice value: {} (the control plane and the webhook inherit it)",
        procstat::niceness()?
    );

    let bin = Path::new(env!("CARGO_BIN_EXE_providers-controlplane"));
    let fixture = fixture::Fixture::start(bin).await?;
    let target = Target::new(
        fixture.webhook.port,
        fixture.webhook.admin_port,
        &fixture.webhook.ca_pem,
        &fixture.plane.info.webhook_client_cert_file,
        &fixture.plane.info.webhook_client_key_file,
    )?;
    let pid = procstat::webhook_pid(fixture.webhook.port)?;
    let (hwm, rss) = procstat::memory_kib(pid)?;
    println!(
        "webhook pid {pid}: after start and registration VmHWM {} VmRSS {}",
        mib(hwm),
        mib(rss)
    );

    if args.only != Part::Apiserver {
        load(&args, &fixture, &target, pid, ticks).await?;
    }
    if args.only != Part::Load {
        through_apiserver(&args, &fixture, &target).await?;
    }
    let (hwm, rss) = procstat::memory_kib(pid)?;
    println!(
        "\nwebhook memory at the end: VmHWM {} VmRSS {}",
        mib(hwm),
        mib(rss)
    );
    println!("load average at the end: {}", procstat::load_average());
    Ok(())
}

async fn load(
    args: &Args,
    fixture: &fixture::Fixture,
    target: &Target,
    pid: u32,
    ticks: f64,
) -> anyhow::Result<()> {
    let scenarios = reviews::scenarios(fixture).await?;
    println!("\n## HTTPS load (closed loop, keep-alive, 127.0.0.1)\n");
    for scenario in &scenarios {
        let (status, body) = target.post_once(scenario.path, &scenario.body).await?;
        anyhow::ensure!(status.is_success(), "{}: {status}", scenario.name);
        let answer = reviews::check_answer(scenario, &body)?;
        println!(
            "- {} ({} request bytes): {answer}",
            scenario.name,
            scenario.body.len()
        );
        if let Some(dir) = &args.dump_reviews {
            std::fs::create_dir_all(dir)?;
            std::fs::write(
                dir.join(format!("{}.json", scenario.file_name)),
                &scenario.body,
            )?;
        }
    }
    if let Some(dir) = &args.dump_reviews {
        std::fs::write(dir.join("ca.crt"), &fixture.webhook.ca_pem)?;
        println!(
            "- review bodies and the CA written to {}; webhook at https://127.0.0.1:{}",
            dir.display(),
            fixture.webhook.port
        );
    }
    // One connection shows the latency of a review on an otherwise idle webhook; the others
    // keep it busy.
    let protocols = [
        (Protocol::Http1, 1),
        (Protocol::Http1, args.http1_connections),
        (
            Protocol::Http2 {
                streams: args.http2_streams,
            },
            args.http2_connections,
        ),
    ];
    // The webhook's own arguments name files in the control plane's folder (its
    // kubeconfig, the callers' CA): it is counted apart.
    let plane_pids: Vec<u32> =
        procstat::pids_with_argument(&fixture.plane.info.dir.display().to_string())
            .into_iter()
            .filter(|p| *p != pid)
            .collect();
    anyhow::ensure!(
        plane_pids.len() >= 2,
        "the control plane's etcd and kube-apiserver were not found: {plane_pids:?}"
    );
    // A fresh API server spends its first minute building OpenAPI for the new CRDs; wait
    // for that, so it does not compete with the webhook.
    let waited = std::time::Instant::now();
    let cores = procstat::wait_until_idle(ticks, &plane_pids, Duration::from_secs(120)).await;
    println!(
        "- waited {:.0} s for the control plane to go idle ({cores:.2} cores in the last second)",
        waited.elapsed().as_secs_f64()
    );
    let placements: &[bool] = if args.pinned {
        &[false, true]
    } else {
        &[false]
    };
    println!(
        "\n| scenario | protocol | conns | CPUs | reviews/s | p50 ms | p99 ms | max ms | failed | CPU webhook / generator / control plane / others (cores) | webhook CPU µs/review | VmHWM | VmRSS |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &pinned in placements {
        if pinned {
            procstat::pin(pid, "0")?;
            procstat::pin(std::process::id(), "1")?;
        }
        for scenario in &scenarios {
            for &(protocol, connections) in &protocols {
                let load = Load {
                    path: scenario.path,
                    body: Arc::new(scenario.body.clone()),
                    expect: scenario.expect,
                    protocol,
                    connections,
                    warmup: Duration::from_secs(args.warmup_seconds),
                    duration: Duration::from_secs(args.seconds),
                    max_requests: args.max_requests,
                };
                let mut window = None;
                let outcome = loadgen::run(target, &load, || {
                    window = Some(CpuWindow::start(ticks, pid, &plane_pids));
                })
                .await
                .with_context(|| scenario.name)?;
                let cpu = window.context("no measurement window")??.finish()?;
                let (hwm, rss) = procstat::memory_kib(pid)?;
                print_row(
                    scenario,
                    protocol,
                    connections,
                    pinned,
                    &outcome,
                    cpu,
                    hwm,
                    rss,
                );
                if let Some(failure) = &outcome.first_failure {
                    println!("  first failure: {failure}");
                }
            }
        }
    }
    if args.pinned {
        procstat::pin(pid, "0,1")?;
        procstat::pin(std::process::id(), "0,1")?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn print_row(
    scenario: &reviews::Scenario,
    protocol: Protocol,
    connections: usize,
    pinned: bool,
    outcome: &loadgen::Outcome,
    cpu: CpuUse,
    hwm: u64,
    rss: u64,
) {
    let latencies = Latencies::new(outcome.latencies.clone());
    let name = if scenario.calls_apiserver {
        format!("{} (calls the API server)", scenario.name)
    } else {
        scenario.name.to_owned()
    };
    let cpus = if pinned {
        "webhook 1, generator 1"
    } else {
        "2 shared"
    };
    println!(
        "| {name} | {} | {connections} | {cpus} | {:.0} | {} | {} | {} | {} | {:.2} / {:.2} / {:.2} / {:.2} | {:.0} | {} | {} |",
        protocol.label(),
        outcome.per_second(),
        ms(latencies.median()),
        ms(latencies.percentile(99.0)),
        ms(latencies.max()),
        outcome.failed,
        cpu.webhook,
        cpu.generator,
        cpu.control_plane,
        cpu.others,
        cpu.webhook * 1e6 / outcome.per_second(),
        mib(hwm),
        mib(rss),
    );
}

async fn through_apiserver(
    args: &Args,
    fixture: &fixture::Fixture,
    target: &Target,
) -> anyhow::Result<()> {
    let settings = apiserver::Settings {
        updates: args.updates,
        warmup: 10,
        rounds: args.rounds,
    };
    println!(
        "\n## Through the API server ({} rounds of {} sequential updates of each kind: the webhooks, none, the floor over h2 and over HTTP/1.1)\n",
        settings.rounds, settings.updates
    );
    let report = apiserver::measure(fixture, target, &settings).await?;
    println!("| update | reviewed by | n | p50 ms | p90 ms | p99 ms | mean ms |");
    println!("|---|---|---|---|---|---|---|");
    for (update, pick) in [
        (
            "spec.retry raised (both configurations)",
            (|m: &apiserver::Measured| &m.retry) as fn(&apiserver::Measured) -> &Latencies,
        ),
        (
            "label changed (skipped by matchConditions)",
            |m: &apiserver::Measured| &m.label,
        ),
    ] {
        for measured in &report.measured {
            let l = pick(measured);
            println!(
                "| {update} | {} | {} | {} | {} | {} | {} |",
                measured.reviewer.describe(),
                l.len(),
                ms(l.median()),
                ms(l.percentile(90.0)),
                ms(l.percentile(99.0)),
                ms(l.mean()),
            );
        }
    }
    let none = report
        .measured
        .iter()
        .find(|m| m.reviewer == apiserver::Reviewer::Nothing)
        .context("no block without webhooks")?;
    let ratio = |with: &Latencies, without: &Latencies, p: f64| {
        with.percentile(p).as_secs_f64() / without.percentile(p).as_secs_f64()
    };
    println!();
    for measured in report
        .measured
        .iter()
        .filter(|m| m.reviewer != apiserver::Reviewer::Nothing)
    {
        println!(
            "spec.retry update, {} / none: p50 ×{:.2} (+{} ms), p99 ×{:.2}; {} webhook calls; label update p50 ×{:.2}",
            measured.reviewer.describe(),
            ratio(&measured.retry, &none.retry, 50.0),
            ms(measured.retry.median().saturating_sub(none.retry.median())),
            ratio(&measured.retry, &none.retry, 99.0),
            measured.calls,
            ratio(&measured.label, &none.label, 50.0),
        );
        for (webhook, calls, mean) in &measured.apiserver_view {
            println!(
                "  the API server's account of {webhook}: {calls} calls, mean {} ms",
                ms(*mean)
            );
        }
    }
    for (endpoint, calls, mean) in &report.webhook_view {
        println!(
            "the webhook's own account of /{endpoint}: {calls} calls, mean {} ms",
            ms(*mean)
        );
    }
    Ok(())
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}
