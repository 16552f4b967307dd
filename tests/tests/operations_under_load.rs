//! Routine operations while tenants keep writing (issue "operations under load",
//! docs/operations.md "Routine operations under load"): a steady stream of Workspace
//! creates, value changes, retries and deletes through the API server and the webhook,
//! attempts started and ended on the edge, while an operator rolls the webhook, rotates
//! its serving certificate or its sealing key, restarts an API server or rolls the
//! installer. Every write's outcome and every attempt's end is counted: no write may fail,
//! no attempt may be left without its result, no attempt may run twice. The figures
//! (latency, recovery) are the benchmark's, `tests/benches/operations_load.rs`; the tests
//! print theirs for the log only.

use std::time::Duration;

use anyhow::{bail, ensure};
use providers_tests::operations::{self, Bed, Event, EventRun, LoadShape};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const CONTROLPLANE: &str = env!("CARGO_BIN_EXE_providers-controlplane");
/// One Job in this many fails, so retries are part of the load.
const FAIL_EVERY: u64 = 5;
/// 10 writes/s: the benchmark measures at 20; the tests, which share the machine with
/// builds and other suites in CI, prove the counts at half that.
const SHAPE: LoadShape = LoadShape {
    rate: 10.0,
    pool: 40,
    quiet: Duration::from_secs(6),
    settle: Duration::from_secs(120),
};

/// Runs `event` under load on a bed of its own and checks what must hold after any
/// event: no write failed for the platform's sake, every attempt in flight when it began
/// and every attempt of the load has its result, none ran twice, and the event happened
/// under load.
async fn under_load(event: Event, installers: usize) -> anyhow::Result<(Bed, EventRun)> {
    let mut bed = Bed::start(CONTROLPLANE.as_ref(), 2, installers, FAIL_EVERY).await?;
    let run = operations::run(&mut bed, event, SHAPE).await?;
    eprintln!("{}: {}", event.name(), run.figures());
    let failed: Vec<String> = run
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
        run.failed().len(),
        failed.join("\n")
    );
    ensure!(
        run.recovered.waiting.is_empty(),
        "attempts in flight when the event began still without a result: {:?}\n{}",
        run.recovered.waiting,
        bed.installer_logs()
    );
    ensure!(
        run.settled.waiting.is_empty(),
        "attempts without their result {:?} after the load: {:?}\n{}",
        run.settled.took,
        run.settled.waiting,
        bed.installer_logs()
    );
    if let Some(first) = run.run_twice.first() {
        // The Workspace's lines: its release namespace is `org-a-<name>`.
        let workspace = first
            .split("org-a-")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_default();
        bail!(
            "attempts run twice: {:?}\nthe installers on org-a/{workspace}:\n{}",
            run.run_twice,
            bed.installer_lines(&format!("{{workspace=org-a/{workspace}"))
        );
    }
    // The event ran under the load: writes went on through it at about the load's rate
    // (at least half of it; a short event sees a few).
    let during = run.report.between(run.during.0, run.during.1);
    let seconds = (run.during.1 - run.during.0).as_secs_f64();
    ensure!(
        !during.is_empty() && during.len() as f64 >= (SHAPE.rate * seconds * 0.5).floor(),
        "only {} writes were sent during the event ({seconds:.1} s at {} writes/s)",
        during.len(),
        SHAPE.rate
    );
    Ok((bed, run))
}

/// The webhook's two replicas are replaced one at a time, as a Deployment rollout does,
/// while tenants write: the old replica, sent SIGTERM before the endpoints drop it, serves
/// on until they have, then drains. Not one write fails, and the Service never sends a
/// connection to a replica that closed its port (it does without `--shutdown-delay`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_of_the_webhook_fails_no_write() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let (bed, _) = under_load(Event::WebhookRoll, 1).await?;
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
/// caBundle first beside the old one, then alone. Not one write fails (with the new CA
/// alone before the new certificate, 44 of 247 did).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_serving_certificate_and_its_ca_rotate_under_load_and_no_write_fails()
-> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    under_load(Event::CertificateRotation, 1).await?;
    Ok(())
}

/// The sealing key is rotated while tenants write and attempts run, as "Rotating the
/// sealing key" says: the new public key published and the webhook rolled (every replica
/// now accepts both keys), then the new private key and the webhook rolled again. Retries
/// of plans sealed with the old key are verified and sealed anew; no write fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sealing_key_rotates_under_load_and_no_write_fails() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let (bed, run) = under_load(Event::SealingKeyRotation, 1).await?;
    let (old, new) = run.keys.clone().unwrap_or_default();
    let keys = bed.plans_by_key().await?;
    eprintln!("current plans by key: {keys:?} (old {old}, new {new})");
    ensure!(
        keys.get(&new).copied().unwrap_or(0) > 0,
        "no plan is sealed with the new key: {keys:?}"
    );
    Ok(())
}

/// The hub's kube-apiserver is restarted while tenants write and attempts run: every
/// watch of the webhook and the installer resumes (a relist where the API server no
/// longer has their resource version), no attempt is left waiting, none runs twice. Only
/// writes sent while the API server was away fail, unanswered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_hub_api_server_restarts_under_load_and_no_attempt_is_lost() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    under_load(Event::HubRestart, 1).await?;
    Ok(())
}

/// The edge's kube-apiserver is restarted while tenants write and attempts run there: the
/// installer's edge watches resume, every attempt gets its result, none runs twice, and
/// no write fails (the hub never went away).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_edge_api_server_restarts_under_load_and_no_attempt_is_lost() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    under_load(Event::EdgeRestart, 1).await?;
    Ok(())
}

/// Both installer replicas are replaced one at a time (SIGTERM, as a rollout stops a
/// Pod) while tenants write: the edges move to the new replicas, no attempt is lost, none
/// runs twice, and no write fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_of_the_installer_loses_no_attempt() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    under_load(Event::InstallerRoll, 2).await?;
    Ok(())
}
