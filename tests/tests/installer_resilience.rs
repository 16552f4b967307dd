//! The installer controller when things break: a controller killed at the worst moment,
//! a replica killed while another shares the edges, an edge API that goes away and comes back.
//!
//! The edge is registered through a TCP proxy that the outage test cuts. The tests run one
//! at a time (they kill processes and cut the network), each with its own controllers.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, ensure};
use futures::StreamExt;
use k8s_openapi::api::{
    batch::v1::Job,
    coordination::v1::Lease,
    core::v1::{Namespace, ServiceAccount},
    rbac::v1::Role,
};
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams},
    runtime::watcher,
};
use providers_shared::{
    api::{JobResult, Workspace},
    installer::{edge_owners::edge_lease, names},
};
use providers_tests::installer::{
    self, ControllerOptions, Environment, Options, PlanSpec, SYSTEM, eventually, has_condition,
    status_of, wait_workspace,
};
use serde_json::json;
use tokio::sync::Mutex;

const WAIT: Duration = Duration::from_secs(90);

/// One test at a time.
static SERIAL: Mutex<()> = Mutex::const_new(());

async fn env() -> anyhow::Result<&'static Environment> {
    installer::environment(
        Path::new(env!("CARGO_BIN_EXE_providers-controlplane")),
        Options { proxied_edge: true },
    )
    .await
}

async fn jobs_of(edge: &Client, uid: &str) -> anyhow::Result<Vec<Job>> {
    let selector = format!("{}={uid}", names::LABEL_WORKSPACE_UID);
    Ok(Api::<Job>::all(edge.clone())
        .list(&ListParams::default().labels(&selector))
        .await?
        .items)
}

/// Counts the ADDED and DELETED events of one object, from now on.
fn count_events<K>(
    api: Api<K>,
    name: &str,
) -> (
    Arc<AtomicUsize>,
    Arc<AtomicUsize>,
    tokio::task::JoinHandle<()>,
)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let (added, deleted) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (a, d) = (added.clone(), deleted.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let task = tokio::spawn(async move {
        let mut seen = false;
        let mut events = watcher(api, config).boxed();
        while let Some(Ok(event)) = events.next().await {
            match event {
                watcher::Event::Apply(_) | watcher::Event::InitApply(_) if !seen => {
                    seen = true;
                    a.fetch_add(1, Ordering::SeqCst);
                }
                watcher::Event::Delete(_) => {
                    seen = false;
                    d.fetch_add(1, Ordering::SeqCst);
                }
                _ => {}
            }
        }
    });
    (added, deleted, task)
}

/// A crash between steps repeats nothing harmful: the controller dies right after creating
/// the Job, before recording it; its restart finds that Job (no second one), records it and
/// the result, and revokes the identity once — also across a second crash in the middle of
/// the revocation.
#[tokio::test]
async fn controller_killed_between_job_and_status_makes_no_second_job() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let case = "crash";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let namespace = "crash-hello";
    let spec = PlanSpec::hello(case, "org-a", "crash-demo", namespace);
    let plan = env.plan(&spec, 1, "");
    let runner = names::AttemptNames::for_job(&plan.job).runner;
    env.runner.hold(&plan.job);
    let (sa_added, sa_deleted, sa_watch) = count_events(
        Api::<ServiceAccount>::namespaced(edge.clone(), namespace),
        &runner,
    );
    let (job_added, _, job_watch) =
        count_events(Api::<Job>::namespaced(edge.clone(), namespace), &plan.job);

    let lease = format!("lease-{case}");
    let mut first = env
        .controller(ControllerOptions {
            exit_after: Some("create-job".into()),
            ..ControllerOptions::new(case, "crash-0", &lease)
        })
        .await?;
    let created = env.create_workspace(&hub, &spec, plan.clone()).await?;
    let uid = created.uid().context("uid")?;
    let exit = first.exited(WAIT).await?;
    ensure!(
        exit.code() == Some(86),
        "it died at the crash point: {exit:?}\n{}",
        first.log_tail()
    );
    let job = Api::<Job>::namespaced(edge.clone(), namespace)
        .get(&plan.job)
        .await?;
    let ws = Api::<Workspace>::namespaced(hub.clone(), "org-a")
        .get("crash-demo")
        .await?;
    ensure!(
        status_of(&ws).job_uid.is_none(),
        "killed before the Job was recorded"
    );
    ensure!(
        status_of(&ws).preparation.is_some(),
        "the preparation was recorded first"
    );

    // The restarted controller (same identity, as a restarted Pod) records the Job it finds.
    let mut second = env
        .controller(ControllerOptions {
            exit_after: Some("delete-service-account".into()),
            ..ControllerOptions::new(case, "crash-0", &lease)
        })
        .await?;
    wait_workspace(&hub, "org-a", "crash-demo", "the Job recorded", |ws| {
        status_of(ws).job_uid == job.uid()
    })
    .await?;
    ensure!(
        jobs_of(&edge, &uid).await?.len() == 1,
        "still exactly one Job"
    );

    // The Job runs; this controller records the result and dies after deleting the
    // ServiceAccount, before the Role: a third one finishes.
    env.runner.release(&plan.job);
    let exit = second.exited(WAIT).await?;
    ensure!(
        exit.code() == Some(86),
        "it died in the middle of the revocation: {exit:?}"
    );
    let ws = Api::<Workspace>::namespaced(hub.clone(), "org-a")
        .get("crash-demo")
        .await?;
    ensure!(
        status_of(&ws).job_result == Some(JobResult::Succeeded),
        "the result came first"
    );
    ensure!(!status_of(&ws).cleaned_up);
    ensure!(
        Api::<Role>::namespaced(edge.clone(), namespace)
            .get_opt(&runner)
            .await?
            .is_some(),
        "the crash left the Role"
    );
    let _third = env
        .controller(ControllerOptions::new(case, "crash-0", &lease))
        .await?;
    let done = wait_workspace(&hub, "org-a", "crash-demo", "cleaned up", |ws| {
        status_of(ws).cleaned_up && has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    ensure!(status_of(&done).job_uid == job.uid());
    ensure!(
        Api::<Role>::namespaced(edge.clone(), namespace)
            .get_opt(&runner)
            .await?
            .is_none()
    );
    // The counts are read once the revocation's DELETED has come through the watch: a
    // watch delivers in order, so every creation before it has been counted too.
    let revoked = tokio::time::timeout(Duration::from_secs(30), async {
        while sa_deleted.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    ensure!(
        revoked.is_ok(),
        "the watch saw the identity's revocation within 30 s"
    );
    sa_watch.abort();
    job_watch.abort();
    ensure!(jobs_of(&edge, &uid).await?.len() == 1, "one Job in the end");
    ensure!(
        job_added.load(Ordering::SeqCst) == 1,
        "the Job was created once"
    );
    ensure!(
        sa_added.load(Ordering::SeqCst) == 1,
        "the identity was created once"
    );
    ensure!(sa_deleted.load(Ordering::SeqCst) == 1, "and revoked once");
    Ok(())
}

async fn holder(hub: &Client, lease: &str) -> anyhow::Result<Option<String>> {
    Ok(Api::<Lease>::namespaced(hub.clone(), SYSTEM)
        .get_opt(lease)
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity))
}

/// One writer of an edge at a time, and a failover loses no attempt: two replicas share
/// the edges; the one holding the Workspace's edge is killed mid-attempt; the other takes
/// the edge over within the lease time and carries the attempt on; never a second Job.
#[tokio::test]
async fn a_killed_replicas_edge_is_taken_over_within_the_lease_time() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let case = "failover";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let lease = format!("lease-{case}");
    let fence = edge_lease(&lease, installer::EDGE);
    let one = env
        .controller(ControllerOptions::new(case, "replica-1", &lease))
        .await?;
    let two = env
        .controller(ControllerOptions::new(case, "replica-2", &lease))
        .await?;
    let namespace = "failover-hello";
    let spec = PlanSpec::hello(case, "org-b", "failover-demo", namespace);
    let plan = env.plan(&spec, 1, "");
    env.runner.hold(&plan.job);
    let created = env.create_workspace(&hub, &spec, plan.clone()).await?;
    let uid = created.uid().context("uid")?;
    wait_workspace(&hub, "org-b", "failover-demo", "the Job recorded", |ws| {
        status_of(ws).job_uid.is_some()
    })
    .await?;
    let owner = holder(&hub, &fence)
        .await?
        .context("the edge's fencing Lease is held while its Job runs")?;
    // Readiness: each replica once its Workspace cache is synced and its edges probed.
    for replica in [&one, &two] {
        eventually("a replica's /readyz", WAIT, || async {
            let ready = replica.readyz().await?;
            Ok((ready.starts_with("HTTP/1.0 200")
                && ready.contains("ready: running, Workspace cache synced, "))
            .then_some(()))
        })
        .await?;
    }
    let (mut killed_one, mut survivor, survivor_name) = match owner.as_str() {
        "replica-1" => (one, two, "replica-2"),
        "replica-2" => (two, one, "replica-1"),
        other => anyhow::bail!("the edge's Lease is held by {other}, no replica of this test"),
    };

    killed_one.kill();
    let killed = Instant::now();
    eventually("the survivor to take the edge over", WAIT, || async {
        Ok((holder(&hub, &fence).await?.as_deref() == Some(survivor_name)).then_some(()))
    })
    .await?;
    let takeover = killed.elapsed();
    // Lease 6 s, retry period 1 s: at most one lease duration and a retry, plus a margin.
    ensure!(
        takeover <= Duration::from_secs(9),
        "took over after {takeover:?}"
    );
    eprintln!(
        "{survivor_name} took the edge over {takeover:?} after {owner} was killed (lease 6 s)"
    );

    env.runner.release(&plan.job);
    let done = wait_workspace(
        &hub,
        "org-b",
        "failover-demo",
        "installed by the survivor",
        |ws| status_of(ws).cleaned_up && has_condition(ws, "Ready", "True", "Installed"),
    )
    .await?;
    ensure!(status_of(&done).attempts.len() == 1);
    ensure!(jobs_of(&edge, &uid).await?.len() == 1, "no duplicate Job");
    ensure!(survivor.running(), "the survivor still runs");
    Ok(())
}

/// An unreachable edge pauses the attempt without losing it: the edge API goes away:
/// EdgeUnreachable, with growing retry delays and nothing created; when it is back, the
/// attempt resumes. Cut again while a Job runs: the attempt waits, and its result is
/// recorded once the edge answers again.
#[tokio::test]
async fn unreachable_edge_backs_off_and_the_attempt_resumes() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let case = "outage";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let controller = env
        .controller(ControllerOptions::new(
            case,
            "outage-0",
            &format!("lease-{case}"),
        ))
        .await?;
    let namespace = "outage-hello";
    let spec = PlanSpec::hello(case, "org-a", "outage-demo", namespace);

    // Wait until this controller has seen the edge Ready, then cut it.
    eventually("the edge probed Ready", WAIT, || async {
        Ok(controller
            .log_text()
            .contains("the edge is Ready")
            .then_some(()))
    })
    .await?;
    env.cut_edge()?;
    let created = env
        .create_workspace(&hub, &spec, env.plan(&spec, 1, ""))
        .await?;
    let waiting = wait_workspace(&hub, "org-a", "outage-demo", "EdgeUnreachable", |ws| {
        has_condition(ws, "Ready", "False", "EdgeUnreachable")
    })
    .await?;
    ensure!(has_condition(
        &waiting,
        "Progressing",
        "False",
        "EdgeUnreachable"
    ));
    let message = installer::condition(&waiting, "Ready")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(
        message.contains("edge-1") && message.contains("unreachable"),
        "{message}"
    );
    // Backoff: the probes and the Workspace's retries space out while the edge is away.
    eventually("growing delays", WAIT, || async {
        let log = controller.log_text();
        let probes = ["next_probe_in=1s", "next_probe_in=2s", "next_probe_in=4s"]
            .iter()
            .all(|d| log.contains(d));
        Ok(probes.then_some(()))
    })
    .await?;
    ensure!(
        Api::<Namespace>::all(edge.clone())
            .get_opt(namespace)
            .await?
            .is_none(),
        "nothing was created while the edge was away"
    );
    let status = status_of(
        &Api::<Workspace>::namespaced(hub.clone(), "org-a")
            .get("outage-demo")
            .await?,
    );
    ensure!(
        status.attempt == Some(1) && status.preparation.is_none(),
        "bound, not prepared: {status:?}"
    );

    env.restore_edge()?;
    let restored = Instant::now();
    let done = wait_workspace(
        &hub,
        "org-a",
        "outage-demo",
        "the attempt resumed and finished",
        |ws| status_of(ws).cleaned_up && has_condition(ws, "Ready", "True", "Installed"),
    )
    .await?;
    eprintln!(
        "installed {:?} after the edge came back",
        restored.elapsed()
    );
    ensure!(
        status_of(&done).attempts.len() == 1,
        "the same attempt resumed"
    );
    ensure!(
        jobs_of(&edge, &created.uid().unwrap_or_default())
            .await?
            .len()
            == 1
    );

    // Cut while a Job runs; the Job completes on the edge meanwhile.
    let spec = PlanSpec::hello(case, "org-a", "outage-running", "outage-running");
    let plan = env.plan(&spec, 1, "");
    env.runner.hold(&plan.job);
    env.create_workspace(&hub, &spec, plan.clone()).await?;
    wait_workspace(&hub, "org-a", "outage-running", "the Job running", |ws| {
        has_condition(ws, "Progressing", "True", "JobRunning")
    })
    .await?;
    env.cut_edge()?;
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let complete = |kind: &str| {
        json!({"type": kind, "status": "True", "reason": "CompletionsReached",
               "message": "Reached expected number of succeeded pods",
               "lastProbeTime": now, "lastTransitionTime": now})
    };
    Api::<Job>::namespaced(edge.clone(), "outage-running")
        .patch_status(
            &plan.job,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"startTime": now, "active": 0, "succeeded": 1, "completionTime": now,
                "conditions": [complete("SuccessCriteriaMet"), complete("Complete")]}})),
        )
        .await?;
    wait_workspace(
        &hub,
        "org-a",
        "outage-running",
        "EdgeUnreachable while running",
        |ws| has_condition(ws, "Progressing", "False", "EdgeUnreachable"),
    )
    .await?;
    let ws = Api::<Workspace>::namespaced(hub.clone(), "org-a")
        .get("outage-running")
        .await?;
    ensure!(
        status_of(&ws).job_result.is_none(),
        "no result while the edge is away"
    );
    env.restore_edge()?;
    let done = wait_workspace(
        &hub,
        "org-a",
        "outage-running",
        "the result after the outage",
        |ws| status_of(ws).cleaned_up && has_condition(ws, "Ready", "True", "Installed"),
    )
    .await?;
    ensure!(status_of(&done).job_result == Some(JobResult::Succeeded));
    Ok(())
}
