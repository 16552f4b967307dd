//! Routine operations while tenants keep writing (issue "operations under load",
//! docs/operations.md "Operations under load"): a steady stream of Workspace creates,
//! value changes, retries and deletes through the API server and the webhook, attempts
//! started and ended on the edge, while an operator rolls the webhook, rotates its serving
//! certificate, restarts an API server or rolls the installer. Every write's outcome and
//! every attempt's end is counted: no write may fail, no attempt may be left without its
//! result, no attempt may run twice. The figures (latency, recovery) are the benchmark's,
//! `tests/benches/operations_load.rs`; the tests print theirs for the log only.

use std::time::Duration;

use anyhow::ensure;
use testbed::{
    operations::{Bed, Settled},
    write_load::{LoadReport, latency_ms},
};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const CONTROLPLANE: &str = env!("CARGO_BIN_EXE_providers-controlplane");
/// Writes per second, and the Workspace names they work on.
const RATE: f64 = 20.0;
const POOL: usize = 40;
/// One Job in this many fails, so retries are part of the load.
const FAIL_EVERY: u64 = 5;
/// Load before and after the event.
const QUIET: Duration = Duration::from_secs(6);
/// How long every attempt may take to get its result once the load stops.
const SETTLE: Duration = Duration::from_secs(120);

/// What must hold after any event: no failed write, every attempt's result recorded, no
/// attempt run twice, and the event itself under load.
fn nothing_lost(
    bed: &Bed,
    report: &LoadReport,
    settled: &Settled,
    during: (Duration, Duration),
) -> anyhow::Result<()> {
    let in_event = report.between(during.0, during.1);
    let before = report.between(Duration::ZERO, during.0);
    eprintln!(
        "{}; before the event p50 {:.0} ms p99 {:.0} ms; during it ({:.1} s, {} writes) p50 {:.0} ms p99 {:.0} ms max {:.0} ms; every attempt's result {:.1} s after the load; {} Jobs",
        report.summary(),
        latency_ms(&before, 0.5),
        latency_ms(&before, 0.99),
        (during.1 - during.0).as_secs_f64(),
        in_event.len(),
        latency_ms(&in_event, 0.5),
        latency_ms(&in_event, 0.99),
        latency_ms(&in_event, 1.0),
        settled.took.as_secs_f64(),
        bed.completer.jobs_seen(),
    );
    let failed: Vec<String> = report
        .failed()
        .iter()
        .take(10)
        .map(|w| {
            format!(
                "{:?} {} at {:?}: {}",
                w.kind,
                w.name,
                w.sent,
                w.error.as_deref().unwrap_or("")
            )
        })
        .collect();
    ensure!(
        failed.is_empty(),
        "{} writes failed, the first:\n{}",
        report.failed().len(),
        failed.join("\n")
    );
    ensure!(
        settled.waiting.is_empty(),
        "attempts without their result {:?} after the load: {:?}\n{}",
        settled.took,
        settled.waiting,
        bed.installer_logs()
    );
    let twice = bed.completer.run_twice();
    ensure!(twice.is_empty(), "attempts run twice: {twice:?}");
    ensure!(
        in_event.len() >= 10,
        "only {} writes were sent during the event",
        in_event.len()
    );
    Ok(())
}

/// The webhook's two replicas are replaced one at a time, as a Deployment rollout does,
/// while tenants write: the old replica, sent SIGTERM before the endpoints drop it, serves
/// on until they have, then drains. Not one write fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_of_the_webhook_fails_no_write() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let mut bed = Bed::start(CONTROLPLANE.as_ref(), 2, 1, FAIL_EVERY).await?;
    let load = bed.load("roll", RATE, POOL).await?;
    tokio::time::sleep(QUIET).await;
    let from = load.now();
    bed.roll_webhook(&[], Duration::from_secs(1)).await?;
    let to = load.now();
    tokio::time::sleep(QUIET).await;
    let report = load.stop().await;
    let settled = bed.settle(SETTLE).await?;
    nothing_lost(&bed, &report, &settled, (from, to))?;
    // The Service never sent a connection to a replica that had closed its port.
    ensure!(
        bed.service.refused() == 0,
        "{} connections reached a replica that no longer listened",
        bed.service.refused()
    );
    Ok(())
}

/// The serving certificate is renewed by its CA and then replaced by one of a new CA while
/// tenants write, as cert-manager does it: the kubelet swaps the Secret volume's files
/// (the webhook reloads them without a restart), and a new CA is rolled out in the
/// caBundle first beside the old one, then alone. Not one write fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_serving_certificate_and_its_ca_rotate_under_load_and_no_write_fails()
-> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let mut bed = Bed::start(CONTROLPLANE.as_ref(), 2, 1, FAIL_EVERY).await?;
    let load = bed.load("certs", RATE, POOL).await?;
    tokio::time::sleep(QUIET).await;
    let from = load.now();
    // A renewal: a new certificate and key from the same CA.
    bed.renew_serving_certificate(None).await?;
    // A new CA: trusted beside the old one, then the certificate, then the new CA alone.
    let new_ca = testbed::pki::Authority::generate("webhook-ca-2")?;
    let both = format!("{}{}", bed.webhook.ca_pem, new_ca.cert_pem);
    bed.set_ca_bundle(&both).await?;
    bed.renew_serving_certificate(Some(&new_ca)).await?;
    bed.set_ca_bundle(&new_ca.cert_pem).await?;
    let to = load.now();
    tokio::time::sleep(QUIET).await;
    let report = load.stop().await;
    let settled = bed.settle(SETTLE).await?;
    nothing_lost(&bed, &report, &settled, (from, to))
}
