//! The installer's scale measurement (docs/performance.md, "Installer controller"):
//! 1,000 Workspaces across 3 edges on local control planes. How long until every attempt
//! has its Job, how long until all are cleaned up once their Jobs complete, and the
//! controller's peak resident memory.
//!
//! A measurement, not a check of behaviour, so it is a benchmark target:
//! `cargo build --release --workspace --bins && cargo bench -p providers-tests --bench
//! installer_scale` (`PROVIDERS_SCALE_WORKSPACES` changes the count,
//! `PROVIDERS_SCALE_EDGES` the number of edges). The Jobs' terminal status is set
//! directly, as a job controller would: the measurement is of the controller, not of helm.
//!
//! The API requests per attempt are the `apiserver_request_total` of the hub and every
//! edge (without watches, leases and non-resource requests: `providers_tests::apimetrics`) from
//! before the first create to the end, minus the requests this benchmark makes itself
//! (counted where it makes them), divided by the count. The last line, on stdout, sums it
//! all up for scripts (CPU times over the same window, memory the controller's peak):
//! `installer_scale workspaces=N edges=E jobs_s=.. recorded_s=.. cleanup_s=.. rss_mb=..
//! controller_cpu_s=.. planes_cpu_s=.. writes_per_attempt=.. reads_per_attempt=..`.
//! `tests/benches/peer_helm_controller.rs` measures a peer the same way.
//!
//! With `PROVIDERS_SCALE_DRIFT_INTERVAL` above 0 (default 20 s; `tests/peers/compare.sh`
//! sets 0, as the peer's bench has nothing like it), each completed Job gets the storage
//! record helm would have left (`sh.helm.release.v1.<release>.v1`, labelled as Helm labels
//! it; the benchmark's own writes, which still cost the edge's API server CPU), so the
//! installer sees an installed release; then the cost of drift checks: the controller runs
//! with that `--drift-interval`. Each record's manifest names three objects (a ConfigMap,
//! a Secret and a ServiceAccount), which the benchmark writes as helm would (field manager
//! `helm`, Helm's label), so the installer follows three kinds per release namespace. Over
//! two intervals after cleanup the API requests are counted again, per Workspace per
//! interval; the watches the installer holds are read from its metrics; then one object is
//! edited by another field manager to time until its drift is reported:
//! `PROVIDERS_SCALE_CONTENT_INTERVAL` is the controller's `--drift-content-interval`
//! (default 1800; each release is also compared by contents once right after its attempt):
//! `installer_scale_drift workspaces=N interval_s=.. content_interval_s=.. reads_per_workspace_interval=..
//! writes_per_workspace_interval=.. checks=.. namespace_watches=.. follow_watches=..
//! rss_now_mb=.. detected_s=..`.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{Context, ensure};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{Namespace, Secret},
};
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use providers_shared::{
    api::{Edge, PlanValues, Workspace},
    seal::Sealer,
};
use providers_tests::{
    User,
    apimetrics::{OwnRequests, RequestCounts},
    bench::{self, BenchEdge},
    installer::{self, CASE_LABEL, ControllerOptions, ControllerProcess},
    platform,
};
use serde_json::json;

const ORGS: usize = 10;
const IN_FLIGHT: usize = 32;

/// The API requests this benchmark makes itself, to subtract from the API servers' counts.
static OWN: OwnRequests = OwnRequests::new();

fn edge_name(i: usize) -> String {
    BenchEdge::numbered(i).name
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let count: usize = std::env::var("PROVIDERS_SCALE_WORKSPACES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let edge_count: usize = std::env::var("PROVIDERS_SCALE_EDGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let drift_interval: u64 = std::env::var("PROVIDERS_SCALE_DRIFT_INTERVAL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    // How often each release's objects are compared by contents (the shipped 1800 s
    // unless set; set it to the drift interval to count one check per interval).
    let content_interval: u64 = std::env::var("PROVIDERS_SCALE_CONTENT_INTERVAL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1800);
    let bin = Path::new(env!("CARGO_BIN_EXE_providers-controlplane")).to_path_buf();
    let started = Instant::now();
    let supervised = bench::start_planes(
        &bin,
        std::iter::once("hub".to_owned()).chain((0..edge_count).map(edge_name)),
    )
    .await?;
    let hub = supervised[0].info.clone();
    let edges: Vec<_> = supervised[1..].iter().map(|s| s.info.clone()).collect();
    let sealer = Sealer::from_seed([9; 32]);
    bench::install_platform(&hub, &sealer).await?;
    for (i, edge) in edges.iter().enumerate() {
        installer::register_edge(
            &hub,
            edge,
            &edge_name(i),
            &BenchEdge::numbered(i).cluster,
            &BenchEdge::numbered(i).workspace_uuid,
            None,
        )
        .await?;
    }
    let admin = hub.client(User::Admin).await?;
    // The plans' owner may install onto every edge: the installer asks RBAC again before
    // each attempt starts.
    for i in 0..edge_count {
        platform::grant_install(&admin, "alice", &edge_name(i)).await?;
    }
    for org in 0..ORGS {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": format!("org-scale-{org}")}}))?;
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &ns)
            .await?;
    }
    eprintln!(
        "setup ({} control planes) took {:?}",
        edge_count + 1,
        started.elapsed()
    );

    let mut controller = ControllerProcess::start(
        &hub,
        ControllerOptions {
            args: vec![
                "--concurrency".into(),
                "32".into(),
                "--drift-interval".into(),
                drift_interval.to_string(),
                "--drift-content-interval".into(),
                content_interval.to_string(),
            ],
            ..ControllerOptions::new("scale", "scale-0", "lease-scale")
        },
    )
    .await?;
    let pid = controller.pid().context("the controller runs")?;
    installer::eventually("the edges Ready", Duration::from_secs(60), || async {
        OWN.read();
        let list = Api::<Edge>::all(admin.clone())
            .list(&ListParams::default())
            .await?;
        let ready = list
            .items
            .iter()
            .filter(|e| e.status.as_ref().is_some_and(|s| s.ready))
            .count();
        Ok((ready == edge_count).then_some(()))
    })
    .await
    .with_context(|| controller.log_tail())?;

    let workspaces: Vec<Workspace> = (0..count)
        .map(|i| {
            bench::workspace(
                &sealer,
                "scale",
                i,
                ORGS,
                &BenchEdge::numbered(i % edge_count),
            )
        })
        .collect::<anyhow::Result<_>>()?;
    // Each plan's values, stored as the webhook stores them when it seals.
    stream::iter(&workspaces)
        .map(|ws| {
            let admin = admin.clone();
            async move {
                let org = ws.namespace().unwrap_or_default();
                Api::<PlanValues>::namespaced(admin, &org)
                    .create(&PostParams::default(), &bench::plan_values(ws)?)
                    .await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    let edge_clients = {
        let mut clients = Vec::new();
        for edge in &edges {
            clients.push(edge.client(User::Admin).await?);
        }
        clients
    };
    // Every API server's counts, the benchmark's own requests and the CPU times before
    // the first create.
    let plane_clients: Vec<Client> = std::iter::once(admin.clone())
        .chain(edge_clients.iter().cloned())
        .collect();
    let plane_dirs: Vec<String> = std::iter::once(&hub)
        .chain(edges.iter())
        .map(|p| p.dir.display().to_string())
        .collect();
    let requests_before = RequestCounts::scrape_all(&plane_clients).await?;
    let own_before = (OWN.reads(), OWN.writes());
    let cpu_before = (
        bench::cpu_seconds(pid),
        bench::planes_cpu_seconds(&plane_dirs),
    );
    let t0 = Instant::now();
    stream::iter(workspaces)
        .map(|ws| {
            let admin = admin.clone();
            async move {
                let org = ws.namespace().unwrap_or_default();
                OWN.write();
                Api::<Workspace>::namespaced(admin, &org)
                    .create(&PostParams::default(), &ws)
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    let created = t0.elapsed();
    eprintln!("created {count} Workspaces in {created:?}");

    let all_jobs =
        installer::eventually("every attempt's Job", Duration::from_secs(1800), || async {
            let jobs = count_jobs(&edge_clients).await?;
            Ok((jobs >= count).then_some(jobs))
        })
        .await?;
    let jobs_at = t0.elapsed();
    ensure!(all_jobs == count, "{all_jobs} Jobs for {count} Workspaces");
    eprintln!("every attempt had its Job {jobs_at:?} after the first create");
    let recorded =
        installer::eventually("every Job recorded", Duration::from_secs(600), || async {
            OWN.read();
            let list = Api::<Workspace>::all(admin.clone()).list(&scale()).await?;
            let n = list
                .items
                .iter()
                .filter(|w| w.status.as_ref().is_some_and(|s| s.job_uid.is_some()))
                .count();
            Ok((n == count).then_some(()))
        })
        .await;
    let recorded_at = t0.elapsed();
    recorded?;
    eprintln!("every Job UID was in status {recorded_at:?} after the first create");

    // The job controller's verdict for every Job.
    let t1 = Instant::now();
    for client in &edge_clients {
        OWN.read();
        let jobs = Api::<Job>::all(client.clone())
            .list(&ListParams::default().labels(providers_tests::jobrunner::SELECTOR))
            .await?;
        stream::iter(jobs.items)
            .map(|job| {
                let client = client.clone();
                async move { complete(&client, &job, drift_interval > 0).await }
            })
            .buffer_unordered(IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await?;
    }
    let completed = t1.elapsed();
    eprintln!("set {count} Jobs Complete in {completed:?}");
    // Watched, not polled: a list of 1,000 Workspaces every poll cost the hub a tenth of
    // its CPU while the installer cleaned up (the peer's bench learns it is done from the
    // API server's metrics, which costs nothing).
    OWN.read();
    tokio::time::timeout(
        Duration::from_secs(1800),
        every_cleaned_up(Api::all(admin.clone()), count),
    )
    .await
    .context("timed out waiting for every Workspace to be cleaned up")??;
    let cleaned = t1.elapsed();
    eprintln!("every Workspace was cleaned up {cleaned:?} after the first Job was set Complete");

    eprintln!(
        "CPU time: controller {:.1} s; the {} kube-apiservers and etcds {:.1} s; wall {:.1} s since the first create",
        bench::cpu_seconds(pid),
        edge_count + 1,
        bench::planes_cpu_seconds(&plane_dirs),
        t0.elapsed().as_secs_f64()
    );
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.trim_start_matches(name).trim().to_owned())
            .unwrap_or_default()
    };
    eprintln!(
        "controller peak resident memory (VmHWM) {}, now (VmRSS) {}",
        field("VmHWM:"),
        field("VmRSS:")
    );
    OWN.read();
    let list = Api::<Workspace>::all(admin.clone()).list(&scale()).await?;
    let ready = list
        .items
        .iter()
        .filter(|w| installer::has_condition(w, "Ready", "True", "Installed"))
        .count();
    ensure!(ready == count, "{ready} of {count} Ready");
    // What every write of a Workspace costs the hub grows with its size.
    if let Some(stored) = list.items.first() {
        eprintln!("{}", workspace_size(stored)?);
    }
    ensure!(
        count_jobs(&edge_clients).await? == count,
        "still one Job per Workspace"
    );
    let metrics = controller.scrape().await?;
    for line in metrics.lines().filter(|l| {
        l.starts_with("providers_installer_attempts")
            || l.starts_with("providers_installer_reconcile_errors")
            || l.starts_with("providers_installer_actions_total")
            || l.starts_with("providers_installer_reconcile_duration_seconds_sum")
            || l.starts_with("providers_installer_reconcile_duration_seconds_count")
    }) {
        eprintln!("{line}");
    }

    // The end of the measured window.
    let requests = RequestCounts::scrape_all(&plane_clients)
        .await?
        .delta(&requests_before);
    let own = (OWN.reads() - own_before.0, OWN.writes() - own_before.1);
    let cpu = (
        bench::cpu_seconds(pid) - cpu_before.0,
        bench::planes_cpu_seconds(&plane_dirs) - cpu_before.1,
    );
    let rss_mb = bench::status_kb(pid, "VmHWM:") as f64 / 1024.0;
    eprintln!(
        "API requests to the hub and the edges from the first create to the end: {} reads and {} writes ({} of the writes failed), of which the benchmark's own {} and {}; by verb and resource (the benchmark's own included):\n{requests}",
        requests.reads(),
        requests.writes(),
        requests.failed_writes(),
        own.0,
        own.1
    );
    let per_attempt = |n: u64, own: u64| n.saturating_sub(own) as f64 / count as f64;
    println!(
        "installer_scale workspaces={count} edges={edge_count} jobs_s={:.1} recorded_s={:.1} cleanup_s={:.1} rss_mb={rss_mb:.1} controller_cpu_s={:.1} planes_cpu_s={:.1} writes_per_attempt={:.1} reads_per_attempt={:.1}",
        jobs_at.as_secs_f64(),
        recorded_at.as_secs_f64(),
        cleaned.as_secs_f64(),
        cpu.0,
        cpu.1,
        per_attempt(requests.writes(), own.1),
        per_attempt(requests.reads(), own.0),
    );

    if drift_interval == 0 {
        controller.kill();
        return Ok(());
    }
    // Drift checks of 1,000 installed releases: two intervals, nothing changed.
    let checks_before = reconciles(&controller.scrape().await?);
    let requests_before = RequestCounts::scrape_all(&plane_clients).await?;
    let own_before = (OWN.reads(), OWN.writes());
    let window = Duration::from_secs(2 * drift_interval + drift_interval / 5 + 2);
    tokio::time::sleep(window).await;
    let requests = RequestCounts::scrape_all(&plane_clients)
        .await?
        .delta(&requests_before);
    let own = (OWN.reads() - own_before.0, OWN.writes() - own_before.1);
    let checks = reconciles(&controller.scrape().await?) - checks_before;
    let per_interval = |n: u64, own: u64| n.saturating_sub(own) as f64 / count as f64 / 2.0;
    let metrics = controller.scrape().await?;
    let gauge = |name: &str| -> u64 {
        metrics
            .lines()
            .filter(|line| line.starts_with(name))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    };
    let namespace_watches = gauge("providers_installer_edge_namespace_watches{");
    let follow_watches = gauge("providers_installer_edge_follow_watches{");
    let rss_now_mb = bench::status_kb(pid, "VmRSS:") as f64 / 1024.0;
    // One object of a release edited by hand: how long until the Workspace says so.
    let first = list_first(&admin).await?;
    let plan = first.spec.plan.as_ref().context("sealed")?.plan.clone();
    let edge_of = edges
        .iter()
        .position(|e| e.name == plan.edge_name)
        .unwrap_or(0);
    let t2 = Instant::now();
    OWN.write();
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
        edge_clients[edge_of].clone(),
        &plan.namespace,
    )
    .patch(
        "hello-greeting",
        &PatchParams {
            field_manager: Some("kubectl-edit".into()),
            ..Default::default()
        },
        &Patch::Merge(json!({"data": {"greeting": "by-hand"}})),
    )
    .await?;
    installer::eventually("the drift reported", Duration::from_secs(120), || async {
        OWN.read();
        let ws = installer::workspace(
            &admin,
            &first.namespace().unwrap_or_default(),
            &first.name_any(),
        )
        .await?;
        Ok(ws
            .status
            .and_then(|s| s.drift)
            .filter(|d| d.reason == "ObjectChanged")
            .map(|_| ()))
    })
    .await?;
    let detected = t2.elapsed();
    controller.kill();
    println!(
        "installer_scale_drift workspaces={count} interval_s={drift_interval} content_interval_s={content_interval} reads_per_workspace_interval={:.2} writes_per_workspace_interval={:.2} checks={checks} namespace_watches={namespace_watches} follow_watches={follow_watches} rss_now_mb={rss_now_mb:.1} detected_s={:.1}",
        per_interval(requests.reads(), own.0),
        per_interval(requests.writes(), own.1),
        detected.as_secs_f64(),
    );
    Ok(())
}

/// The controller's count of reconciles, from its metrics.
fn reconciles(metrics: &str) -> u64 {
    metrics
        .lines()
        .find(|l| l.starts_with("providers_installer_reconcile_duration_seconds_count"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or_default() as u64
}

/// One of the benchmark's Workspaces.
async fn list_first(admin: &Client) -> anyhow::Result<Workspace> {
    OWN.read();
    Api::<Workspace>::all(admin.clone())
        .list(&scale().limit(1))
        .await?
        .items
        .into_iter()
        .next()
        .context("a Workspace")
}

/// Waits until `count` Workspaces of the scale case say `cleanedUp`, from one watch.
async fn every_cleaned_up(api: Api<Workspace>, count: usize) -> anyhow::Result<()> {
    use kube::runtime::{WatchStreamExt, watcher};
    // One page, so the watch's first list is the one request counted as the bench's own.
    let page = u32::try_from(count + 1).unwrap_or(u32::MAX);
    let config = watcher::Config::default()
        .labels(&format!("{CASE_LABEL}=scale"))
        .page_size(page);
    let mut cleaned = std::collections::HashSet::new();
    let mut stream = std::pin::pin!(watcher(api, config).applied_objects());
    while let Some(workspace) = stream.try_next().await? {
        if workspace.status.as_ref().is_some_and(|s| s.cleaned_up) {
            cleaned.insert(workspace.name_any());
            if cleaned.len() == count {
                return Ok(());
            }
        }
    }
    anyhow::bail!("the watch of Workspaces ended")
}

fn scale() -> ListParams {
    ListParams::default().labels(&format!("{CASE_LABEL}=scale"))
}

async fn count_jobs(edges: &[Client]) -> anyhow::Result<usize> {
    let mut total = 0;
    for client in edges {
        OWN.read();
        let list = Api::<Job>::all(client.clone())
            .list_metadata(&ListParams::default().labels(providers_tests::jobrunner::SELECTOR))
            .await?;
        total += list.items.len();
    }
    Ok(total)
}

async fn complete(client: &Client, job: &Job, with_record: bool) -> anyhow::Result<()> {
    if with_record {
        leave_release_record(client, job).await?;
    }
    OWN.write();
    bench::set_complete(client, job).await
}

/// The objects the release of each Workspace made, as helm would have: three kinds, so
/// the installer follows three kinds per release namespace.
const RELEASE_OBJECTS: &str = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello-greeting\ndata:\n  greeting: hello\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: hello-token\nstringData:\n  token: sealed\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: hello\n";

/// The storage record helm leaves for revision 1 of the Job's release (its labels, which
/// the installer watches, and its content, whose manifest it reads once to follow the
/// release's objects), and those objects, written with helm's field manager and labels.
async fn leave_release_record(client: &Client, job: &Job) -> anyhow::Result<()> {
    let namespace = job.namespace().unwrap_or_default();
    let helm = |kind: &str, name: &str, body: serde_json::Value| {
        let mut object = json!({
            "apiVersion": "v1", "kind": kind,
            "metadata": {
                "name": name, "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "Helm"},
                "annotations": {"meta.helm.sh/release-name": "hello", "meta.helm.sh/release-namespace": namespace},
            },
        });
        for (key, value) in body.as_object().into_iter().flatten() {
            object[key] = value.clone();
        }
        object
    };
    let apply = PatchParams::apply("helm").force();
    let objects = [
        (
            "ConfigMap",
            "hello-greeting",
            json!({"data": {"greeting": "hello"}}),
        ),
        (
            "Secret",
            "hello-token",
            json!({"stringData": {"token": "sealed"}}),
        ),
        ("ServiceAccount", "hello", json!({})),
    ];
    for (kind, name, body) in objects {
        let resource =
            kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk("", "v1", kind));
        OWN.write();
        Api::<kube::api::DynamicObject>::namespaced_with(client.clone(), &namespace, &resource)
            .patch(name, &apply, &Patch::Apply(helm(kind, name, body)))
            .await?;
    }
    let release = {
        use std::io::Write;
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(
            json!({"name": "hello", "manifest": RELEASE_OBJECTS, "chart": {"metadata": {"name": "hello", "version": "0.1.0"}}})
                .to_string()
                .as_bytes(),
        )?;
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, gzip.finish()?)
    };
    let record: Secret = serde_json::from_value(json!({
        "metadata": {
            "name": "sh.helm.release.v1.hello.v1",
            "namespace": namespace,
            "labels": {"owner": "helm", "name": "hello", "status": "deployed", "version": "1"},
        },
        "type": "helm.sh/release.v1",
        "stringData": {"release": release},
    }))?;
    OWN.write();
    match Api::<Secret>::namespaced(client.clone(), &namespace)
        .create(&PostParams::default(), &record)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The JSON size of one stored Workspace, and of its parts.
fn workspace_size(stored: &Workspace) -> anyhow::Result<String> {
    let status = stored.status.as_ref();
    let kept: usize = status.map_or(0, |s| {
        s.attempts
            .iter()
            .filter_map(|a| a.kept.as_ref())
            .map(json_len)
            .sum()
    });
    Ok(format!(
        "a stored Workspace: {} bytes of JSON; metadata.managedFields {}, spec {} (spec.plan {}), status {} (conditions {}, kept plans {kept})",
        json_len(stored),
        json_len(&stored.metadata.managed_fields),
        json_len(&stored.spec),
        json_len(&stored.spec.plan),
        json_len(&stored.status),
        status.map_or(0, |s| json_len(&s.conditions)),
    ))
}

fn json_len<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(0, |bytes| bytes.len())
}
