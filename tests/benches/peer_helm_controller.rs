//! A peer for the installer's scale measurement (`installer_scale.rs`, docs/performance.md
//! "Installer controller"): k3s-io/helm-controller v0.17.9, the controller that installs a
//! HelmChart by running helm in a Job, on the same kind of test control plane, with the
//! same shape of load: N HelmCharts (`PROVIDERS_SCALE_WORKSPACES`, default 1000) in 10
//! namespaces, created 32 at a time, each for a chart `hello` 0.1.0 from
//! `http://127.0.0.1:1/charts` with its own release namespace.
//!
//! `bash tests/peers/build.sh` builds the peer into target/peers/bin/helm-controller (its
//! main program is upstream's, see tests/peers/helm-controller/main.go), then
//! `cargo bench -p providers-tests --bench peer_helm_controller`.
//!
//! The peer runs with upstream's defaults (50 workers per controller, no client-side rate
//! limit, leader election on the Lease kube-system/helm-controller-lock, the HelmChart CRDs
//! created by the peer itself at start), as the admin user. There is no kubelet and no job
//! controller, so the benchmark plays the job controller and helm, as installer_scale
//! does, and counts what it writes itself apart:
//! 1. Create the HelmCharts; measure until every one has its install Job (the Jobs the peer
//!    labels `helmcharts.helm.cattle.io/chart`) and until the Job's name is in the
//!    HelmChart's status (`status.jobName` and `JobCreated=True`).
//! 2. The peer creates its Jobs suspended and resumes each one once the job controller has
//!    marked it `Suspended=True` (its guard against racing the job controller). The
//!    benchmark sets that condition, as the job controller would right after the create,
//!    and measures until the peer has resumed every Job (`spec.suspend: false`).
//! 3. What helm in the Job would leave behind: the release namespace (`--create-namespace`)
//!    and the release Secret `sh.helm.release.v1.<name>.v1` (`owner=helm`,
//!    `status=deployed`, `version=1`, and the `helmcharts.helm.cattle.io/configHash` label
//!    klipper-helm passes with `--labels`, from the Job's `CONFIG_HASH`). Without it the
//!    peer would take a completed Job for a failed install and suspend it again.
//! 4. Set every Job Complete exactly as installer_scale's `complete()` does, and measure
//!    until the peer has done what it does on completion. On a Job's update the peer
//!    re-reconciles its HelmChart: it looks the release up with a LIST of Secrets (a live
//!    request, not its cache), finds it deployed with the Job's config hash, and stops
//!    there: no status, condition or Event is written for a successful install. So the
//!    signal waited for is the API server's `apiserver_request_total` for `LIST secrets`
//!    having grown by N since the Jobs were set Complete (the benchmark lists no Secrets,
//!    and before step 4 it waits until the peer has been idle for 2 s, so earlier
//!    reconciles are not counted). The benchmark checks afterwards that the peer wrote
//!    nothing more.
//!
//! Reads and writes per item: `apiserver_request_total` (without watches, leases and
//! non-resource requests, see `providers_tests::apimetrics`) from before the first create to the
//! end, minus the requests the benchmark made itself, divided by N. CPU: user + system
//! time of the peer and of the control plane's etcd and kube-apiserver over the same
//! window; memory: the peer's peak resident set (VmHWM).

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail, ensure};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::{
    api::{
        batch::v1::Job,
        core::v1::{Namespace, Secret},
    },
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::{
    Api, Client, ResourceExt,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams},
};
use providers_tests::{
    Supervised, User,
    apimetrics::{OwnRequests, RequestCounts},
    bench, binaries,
    installer::eventually,
};
use serde_json::json;

const ORGS: usize = 10;
const IN_FLIGHT: usize = 32;
/// The label the peer puts on its Jobs (the HelmChart's name).
const CHART_LABEL: &str = "helmcharts.helm.cattle.io/chart";
/// The label klipper-helm gives the release (`helm install --labels`).
const CONFIG_HASH_LABEL: &str = "helmcharts.helm.cattle.io/configHash";
/// The log line the peer writes once it leads and its controllers have started (after
/// their caches synced).
const STARTED: &str = "All controllers have been started";

/// The API requests this benchmark makes itself, to subtract from the API server's counts.
static OWN: OwnRequests = OwnRequests::new();

fn helm_charts() -> ApiResource {
    ApiResource {
        group: "helm.cattle.io".into(),
        version: "v1".into(),
        api_version: "helm.cattle.io/v1".into(),
        kind: "HelmChart".into(),
        plural: "helmcharts".into(),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let count: usize = std::env::var("PROVIDERS_SCALE_WORKSPACES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let peer_bin = binaries::workspace_root()?.join("target/peers/bin/helm-controller");
    if !peer_bin.exists() {
        bail!(
            "{} is missing: run tests/peers/build.sh first (it builds k3s-io/helm-controller)",
            peer_bin.display()
        );
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_providers-controlplane")).to_path_buf();
    let started = Instant::now();
    let plane = tokio::task::spawn_blocking(move || Supervised::start(&bin, "peer")).await??;
    let info = plane.info.clone();
    let admin = info.client(User::Admin).await?;
    for org in 0..ORGS {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": format!("org-scale-{org}")}}))?;
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &ns)
            .await?;
    }
    eprintln!("setup (1 control plane) took {:?}", started.elapsed());

    let mut peer = Peer::start(&peer_bin, info.kubeconfig(User::Admin))?;
    let pid = peer.pid();
    eventually("the peer started", Duration::from_secs(120), || {
        let running = peer.running();
        let log = peer.log_text();
        async move {
            ensure!(running, "the peer exited");
            Ok(log.contains(STARTED).then_some(()))
        }
    })
    .await
    .with_context(|| peer.log_tail())?;
    eprintln!("the peer leads and its controllers run");

    let charts: Vec<DynamicObject> = (0..count).map(helm_chart).collect::<anyhow::Result<_>>()?;
    let before = RequestCounts::scrape(&admin).await?;
    let own_before = (OWN.reads(), OWN.writes());
    let planes = [info.dir.display().to_string()];
    let cpu_before = (bench::cpu_seconds(pid), bench::planes_cpu_seconds(&planes));

    let t0 = Instant::now();
    stream::iter(charts)
        .map(|chart| {
            let admin = admin.clone();
            async move {
                let ns = chart.namespace().unwrap_or_default();
                OWN.write();
                Api::<DynamicObject>::namespaced_with(admin, &ns, &helm_charts())
                    .create(&PostParams::default(), &chart)
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    let created = t0.elapsed();
    eprintln!("created {count} HelmCharts in {created:?}");

    let all_jobs = eventually("every chart's Job", Duration::from_secs(1800), || async {
        let jobs = count_jobs(&admin).await?;
        Ok((jobs >= count).then_some(jobs))
    })
    .await
    .with_context(|| peer.log_tail())?;
    let jobs_at = t0.elapsed();
    ensure!(all_jobs == count, "{all_jobs} Jobs for {count} HelmCharts");
    eprintln!("every chart had its Job {jobs_at:?} after the first create");
    eventually("every Job recorded", Duration::from_secs(600), || async {
        let n = list_charts(&admin)
            .await?
            .iter()
            .filter(|c| job_recorded(c))
            .count();
        Ok((n == count).then_some(()))
    })
    .await
    .with_context(|| peer.log_tail())?;
    let recorded_at = t0.elapsed();
    eprintln!("every Job name was in status {recorded_at:?} after the first create");

    // The job controller's first sync of a suspended Job.
    let t_resume = Instant::now();
    let jobs = list_jobs(&admin).await?;
    ensure!(
        jobs.iter().all(|j| suspended(j) == Some(true)),
        "the peer creates its Jobs suspended"
    );
    stream::iter(jobs)
        .map(|job| {
            let admin = admin.clone();
            async move { mark_suspended(&admin, &job).await }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    let jobs = eventually("every Job resumed", Duration::from_secs(1800), || async {
        let jobs = list_jobs(&admin).await?;
        let resumed = jobs.iter().filter(|j| suspended(j) == Some(false)).count();
        Ok((resumed == count).then_some(jobs))
    })
    .await
    .with_context(|| peer.log_tail())?;
    let resumed_at = t_resume.elapsed();
    eprintln!(
        "the peer resumed every Job {resumed_at:?} after the first was marked Suspended (the job controller's part); \
         {:.1} s after the first create",
        t0.elapsed().as_secs_f64()
    );

    // What helm in each Job would have left behind.
    stream::iter(jobs)
        .map(|job| {
            let admin = admin.clone();
            async move { install_release(&admin, &job).await }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    let quiet = idle(&admin, Duration::from_secs(2), Duration::from_secs(120)).await?;
    let own_idle = (OWN.reads(), OWN.writes());

    // The job controller's verdict for every Job.
    let t1 = Instant::now();
    let jobs = list_jobs(&admin).await?;
    stream::iter(jobs)
        .map(|job| {
            let admin = admin.clone();
            async move { complete(&admin, &job).await }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    let completed = t1.elapsed();
    eprintln!("set {count} Jobs Complete in {completed:?}");
    // The peer's release lookups since (see the top of the file).
    eventually(
        "the peer's release lookup for every completed Job",
        Duration::from_secs(1800),
        || async {
            let now = RequestCounts::scrape(&admin).await?;
            let lookups = now.delta(&quiet).get("LIST", "secrets");
            Ok((lookups >= count as u64).then_some(()))
        },
    )
    .await
    .with_context(|| peer.log_tail())?;
    let done_at = t1.elapsed();
    eprintln!(
        "the peer had looked up every completed Job's release {done_at:?} after the first Job was set Complete"
    );

    // Checks, then the end of the measured window once the peer is idle again.
    let charts = list_charts(&admin).await?;
    let ok = charts.iter().filter(|c| job_recorded(c)).count();
    ensure!(
        ok == count,
        "{ok} of {count} HelmCharts have JobCreated=True and Failed=False"
    );
    let jobs = list_jobs(&admin).await?;
    ensure!(jobs.len() == count, "still one Job per HelmChart");
    let resuspended = jobs.iter().filter(|j| suspended(j) != Some(false)).count();
    ensure!(
        resuspended == 0,
        "the peer suspended {resuspended} completed Jobs again"
    );
    let after = idle(&admin, Duration::from_secs(2), Duration::from_secs(120)).await?;
    let own = (OWN.reads() - own_before.0, OWN.writes() - own_before.1);
    let cpu = (
        bench::cpu_seconds(pid) - cpu_before.0,
        bench::planes_cpu_seconds(&planes) - cpu_before.1,
    );
    let rss_mb = bench::status_kb(pid, "VmHWM:") as f64 / 1024.0;

    let total = after.delta(&before);
    let peer_reads = total.reads().saturating_sub(own.0);
    let peer_writes = total.writes().saturating_sub(own.1);
    let on_completion = after.delta(&quiet);
    let own_on_completion = (OWN.reads() - own_idle.0, OWN.writes() - own_idle.1);
    eprintln!(
        "API requests from the first create to the end: {} reads and {} writes in all ({} of the writes failed), of which the benchmark's own {} and {}; by verb and resource (the benchmark's own included):\n{total}",
        total.reads(),
        total.writes(),
        total.failed_writes(),
        own.0,
        own.1
    );
    eprintln!(
        "after the Jobs were set Complete the peer made {} reads ({} LIST secrets) and {} writes",
        on_completion.reads().saturating_sub(own_on_completion.0),
        on_completion.get("LIST", "secrets"),
        on_completion.writes().saturating_sub(own_on_completion.1)
    );
    eprintln!(
        "CPU time since the first create: peer {:.1} s; kube-apiserver and etcd {:.1} s; wall {:.1} s",
        cpu.0,
        cpu.1,
        t0.elapsed().as_secs_f64()
    );
    eprintln!(
        "peer peak resident memory (VmHWM) {rss_mb:.1} MB, now (VmRSS) {:.1} MB",
        bench::status_kb(pid, "VmRSS:") as f64 / 1024.0
    );
    let log = peer.log_text();
    eprintln!(
        "peer log: {} lines, {} at level error",
        log.lines().count(),
        log.lines().filter(|l| l.contains("level=error")).count()
    );
    for line in log.lines().filter(|l| l.contains("level=error")).take(5) {
        eprintln!("  {line}");
    }
    peer.kill();
    plane.stop()?;

    println!(
        "peer_helm_controller items={count} jobs_s={:.1} done_s={:.1} rss_mb={rss_mb:.1} controller_cpu_s={:.1} planes_cpu_s={:.1} writes_per_item={:.1} reads_per_item={:.1}",
        jobs_at.as_secs_f64(),
        done_at.as_secs_f64(),
        cpu.0,
        cpu.1,
        peer_writes as f64 / count as f64,
        peer_reads as f64 / count as f64,
    );
    Ok(())
}

/// HelmChart `ws-NNNN` in `org-scale-{N % 10}`, installing into its own namespace
/// `scale-NNNN` like a Workspace's attempt in installer_scale.
fn helm_chart(i: usize) -> anyhow::Result<DynamicObject> {
    let name = format!("ws-{i:04}");
    Ok(serde_json::from_value(json!({
        "apiVersion": "helm.cattle.io/v1",
        "kind": "HelmChart",
        "metadata": {"name": name, "namespace": format!("org-scale-{}", i % ORGS)},
        "spec": {
            "repo": "http://127.0.0.1:1/charts",
            "chart": "hello",
            "version": "0.1.0",
            "targetNamespace": format!("scale-{i:04}"),
            "createNamespace": true,
            "values": {"greeting": name},
        },
    }))?)
}

async fn list_charts(admin: &Client) -> anyhow::Result<Vec<DynamicObject>> {
    OWN.read();
    Ok(
        Api::<DynamicObject>::all_with(admin.clone(), &helm_charts())
            .list(&ListParams::default())
            .await?
            .items,
    )
}

/// The peer's status for a chart whose Job it made: the Job's name and JobCreated=True,
/// Failed=False.
fn job_recorded(chart: &DynamicObject) -> bool {
    let status = &chart.data["status"];
    let condition = |kind: &str| {
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .and_then(|c| c["status"].as_str())
            .map(str::to_owned)
    };
    status["jobName"].as_str().is_some_and(|n| !n.is_empty())
        && condition("JobCreated").as_deref() == Some("True")
        && condition("Failed").as_deref() == Some("False")
}

async fn count_jobs(admin: &Client) -> anyhow::Result<usize> {
    OWN.read();
    Ok(Api::<Job>::all(admin.clone())
        .list_metadata(&ListParams::default().labels(CHART_LABEL))
        .await?
        .items
        .len())
}

async fn list_jobs(admin: &Client) -> anyhow::Result<Vec<Job>> {
    OWN.read();
    Ok(Api::<Job>::all(admin.clone())
        .list(&ListParams::default().labels(CHART_LABEL))
        .await?
        .items)
}

fn suspended(job: &Job) -> Option<bool> {
    job.spec.as_ref().and_then(|s| s.suspend)
}

/// The job controller's status for a Job created suspended (what the peer waits for
/// before it resumes the Job).
async fn mark_suspended(client: &Client, job: &Job) -> anyhow::Result<()> {
    let now = Time(Timestamp::now());
    OWN.write();
    Api::<Job>::namespaced(client.clone(), &job.namespace().unwrap_or_default())
        .patch_status(
            &job.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"active": 0, "conditions": [{
                "type": "Suspended", "status": "True", "reason": "JobSuspended",
                "message": "Job suspended", "lastProbeTime": now, "lastTransitionTime": now}]}})),
        )
        .await?;
    Ok(())
}

/// What `helm install --create-namespace --labels <configHash>` in the Job leaves: the
/// release namespace and the deployed release's Secret.
async fn install_release(client: &Client, job: &Job) -> anyhow::Result<()> {
    let env = |name: &str| -> anyhow::Result<String> {
        job.spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|s| s.containers.first())
            .and_then(|c| c.env.as_ref())
            .and_then(|env| env.iter().find(|e| e.name == name))
            .and_then(|e| e.value.clone())
            .with_context(|| format!("{} has no {name}", job.name_any()))
    };
    let (release, target, hash) = (env("NAME")?, env("TARGET_NAMESPACE")?, env("CONFIG_HASH")?);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": target}}))?;
    OWN.write();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {
            "name": format!("sh.helm.release.v1.{release}.v1"),
            "namespace": target,
            "labels": {"name": release, "owner": "helm", "status": "deployed", "version": "1",
                       CONFIG_HASH_LABEL: hash},
        },
        "type": "helm.sh/release.v1",
        "stringData": {"release": "not a real release: the benchmark ran no helm"},
    }))?;
    OWN.write();
    Api::<Secret>::namespaced(client.clone(), &target)
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

/// Exactly installer_scale's `complete()`.
async fn complete(client: &Client, job: &Job) -> anyhow::Result<()> {
    let now = Time(Timestamp::now());
    let condition = |kind: &str| {
        json!({"type": kind, "status": "True", "reason": "CompletionsReached",
               "message": "Reached expected number of succeeded pods",
               "lastProbeTime": now, "lastTransitionTime": now})
    };
    OWN.write();
    Api::<Job>::namespaced(client.clone(), &job.namespace().unwrap_or_default())
        .patch_status(
            &job.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"startTime": now, "active": 0, "succeeded": 1,
                "completionTime": now, "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]}})),
        )
        .await?;
    Ok(())
}

/// Waits until the API server has served no counted request (the benchmark makes none
/// meanwhile: /metrics is not counted) for `quiet`, and returns its counts then. After
/// `timeout` it goes on with a warning.
async fn idle(admin: &Client, quiet: Duration, timeout: Duration) -> anyhow::Result<RequestCounts> {
    let deadline = Instant::now() + timeout;
    let mut last = RequestCounts::scrape(admin).await?;
    let mut since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = RequestCounts::scrape(admin).await?;
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= quiet {
            return Ok(last);
        }
        if Instant::now() > deadline {
            eprintln!("warning: the API server was not idle for {quiet:?} within {timeout:?}");
            return Ok(last);
        }
    }
}

/// The peer process, logging to a file in a temporary folder. Dropping it kills it.
struct Peer {
    child: Option<Child>,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Peer {
    /// Starts the peer with upstream's defaults, pointed at `kubeconfig`.
    fn start(bin: &Path, kubeconfig: &Path) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("providers-peer-helm-controller-")
            .tempdir()?;
        let log = dir.path().join("helm-controller.log");
        let file = std::fs::File::create(&log)?;
        let mut command = Command::new(bin);
        command.arg("--kubeconfig").arg(kubeconfig);
        // The variables its flags read, and those its leader election and Jobs read: none
        // may change upstream's defaults.
        for var in [
            "CONTROLLER_NAME",
            "JOB_RESOURCES",
            "DEFAULT_JOB_IMAGE",
            "JOB_TOLERATIONS",
            "JOB_CLUSTER_ROLE",
            "KUBECONFIG",
            "MASTERURL",
            "NAMESPACE",
            "NODE_NAME",
            "THREADS",
            "CATTLE_DEV_MODE",
            "CATTLE_ELECTION_LEASE_DURATION",
            "CATTLE_ELECTION_RENEW_DEADLINE",
            "CATTLE_ELECTION_RETRY_PERIOD",
            "all_proxy",
            "ALL_PROXY",
            "http_proxy",
            "HTTP_PROXY",
            "https_proxy",
            "HTTPS_PROXY",
            "no_proxy",
            "NO_PROXY",
        ] {
            command.env_remove(var);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        eprintln!("the peer logs to {}", log.display());
        Ok(Self {
            child: Some(child),
            log,
            _dir: dir,
        })
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or_default()
    }

    fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn log_tail(&self) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        format!(
            "the peer's log ({}), last lines:\n{}",
            self.log.display(),
            lines[lines.len().saturating_sub(40)..].join("\n")
        )
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}
