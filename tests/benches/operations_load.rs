//! Routine operations under a steady load of tenant writes (docs/performance.md
//! "Operations under load"): for each event, a hub and an edge (local control planes),
//! two webhook replicas behind one Service address, the installer (sharing the edges), and
//! tenants writing at a fixed rate (creates, value changes, retries, deletes) while Jobs
//! are ended on the edge as they appear, one in five failed.
//!
//! `cargo build --release --workspace --bins && cargo bench -p providers-tests --bench
//! operations_load`. Settings, from the environment:
//! - `PROVIDERS_OPS_EVENTS`: a comma-separated list of `webhook-roll`, `certificate`,
//!   `sealing-key`, `hub-restart`, `edge-restart`, `installer-roll` (default: all);
//! - `PROVIDERS_OPS_ROUNDS` (3): runs of each event, each on a fresh bed;
//! - `PROVIDERS_OPS_RATE` (20 writes/s), `PROVIDERS_OPS_POOL` (40 Workspaces),
//!   `PROVIDERS_OPS_QUIET` (15 s of load before and after the event).
//!
//! One line per run on stderr; the last lines, on stdout, sum each event up for scripts:
//! `operations_load event=E rounds=N writes=.. failed=.. unanswered=.. lost=.. twice=..
//! p99_before_ms=.. p99_during_ms=.. (medians) recovered_max_s=.. settled_max_s=..`.

use std::time::Duration;

use providers_tests::operations::{self, Bed, Event, LoadShape};

const CONTROLPLANE: &str = env!("CARGO_BIN_EXE_providers-controlplane");

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> anyhow::Result<()> {
    let wanted = std::env::var("PROVIDERS_OPS_EVENTS").unwrap_or_default();
    let events: Vec<Event> = Event::ALL
        .into_iter()
        .filter(|e| wanted.is_empty() || wanted.split(',').any(|w| w.trim() == e.name()))
        .collect();
    let rounds = setting("PROVIDERS_OPS_ROUNDS", 3);
    let shape = LoadShape {
        rate: setting("PROVIDERS_OPS_RATE", 20) as f64,
        pool: setting("PROVIDERS_OPS_POOL", 40) as usize,
        quiet: Duration::from_secs(setting("PROVIDERS_OPS_QUIET", 15)),
        settle: Duration::from_secs(300),
    };
    let mut summaries = Vec::new();
    for event in events {
        let installers = if event == Event::InstallerRoll { 2 } else { 1 };
        let (mut writes, mut failed, mut unanswered, mut lost, mut twice) = (0, 0, 0, 0, 0);
        let (mut p99_before, mut p99_during) = (Vec::new(), Vec::new());
        let (mut recovered_max, mut settled_max) = (0.0f64, 0.0f64);
        for round in 1..=rounds {
            let mut bed = Bed::start(CONTROLPLANE.as_ref(), 2, installers, 5).await?;
            let run = operations::run(&mut bed, event, shape).await?;
            eprintln!("{} round {round}: {}", event.name(), run.figures());
            writes += run.report.writes.len();
            failed += run.failed().len();
            unanswered += run.unanswered();
            lost += run.recovered.waiting.len() + run.settled.waiting.len();
            twice += run.run_twice.len();
            let before = run.report.between(Duration::ZERO, run.during.0);
            let during = run.report.between(run.during.0, run.during.1);
            p99_before.push(providers_tests::write_load::latency_ms(&before, 0.99));
            p99_during.push(providers_tests::write_load::latency_ms(&during, 0.99));
            recovered_max = recovered_max.max(run.recovered.took.as_secs_f64());
            settled_max = settled_max.max(run.settled.took.as_secs_f64());
        }
        summaries.push(format!(
            "operations_load event={} rounds={rounds} writes={writes} failed={failed} unanswered={unanswered} lost={lost} twice={twice} p99_before_ms={:.0} p99_during_ms={:.0} recovered_max_s={recovered_max:.1} settled_max_s={settled_max:.1}",
            event.name(),
            median(&mut p99_before),
            median(&mut p99_during),
        ));
    }
    for line in summaries {
        println!("{line}");
    }
    Ok(())
}
