//! What the installer benchmarks (`tests/benches/installer_*.rs`) share: Workspaces sealed
//! as the webhook would seal them, with their PlanValues; a Job set Complete as the job
//! controller would; CPU time and memory of processes from /proc.

use anyhow::Context;
use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{
    Api, Client, ResourceExt,
    api::{Patch, PatchParams},
};
use providers_shared::{
    api::{ChartRef, Owner, Plan, PlanValues, Workspace, WorkspaceIdentity, WorkspaceSpec},
    seal::Sealer,
};
use serde_json::json;

use crate::{
    ControlPlaneInfo, Supervised,
    installer::{self, CASE_LABEL},
    platform, webhook,
};

/// Control planes named `names`, started side by side with the `providers-controlplane`
/// binary `bin`; torn down when the returned handles are dropped.
pub async fn start_planes(
    bin: &std::path::Path,
    names: impl IntoIterator<Item = String>,
) -> anyhow::Result<Vec<Supervised>> {
    let starting: Vec<_> = names
        .into_iter()
        .map(|name| {
            let bin = bin.to_path_buf();
            tokio::task::spawn_blocking(move || Supervised::start(&bin, &name))
        })
        .collect();
    let mut planes = Vec::new();
    for plane in starting {
        planes.push(plane.await??);
    }
    Ok(planes)
}

/// The platform (CRDs, namespaces, tenant RBAC from manifests/) on `hub`, and `sealer`'s
/// public key published as the webhook publishes it.
pub async fn install_platform(hub: &ControlPlaneInfo, sealer: &Sealer) -> anyhow::Result<()> {
    let (hub, key_id, pem) = (
        hub.clone(),
        sealer.key_id().to_owned(),
        sealer.public_key_pem(),
    );
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        platform::install(&hub)?;
        webhook::publish_keys(&hub, &key_id, &pem)
    })
    .await?
}

/// An Edge as a benchmark registers it.
#[derive(Clone, Debug)]
pub struct BenchEdge {
    pub name: String,
    pub cluster: String,
    /// The workspace UUID it is registered with.
    pub workspace_uuid: String,
}

impl BenchEdge {
    /// The `i`th edge (from 0): `edge-<i+1>` of `cluster-<i+1>`.
    pub fn numbered(i: usize) -> Self {
        Self {
            name: format!("edge-{}", i + 1),
            cluster: format!("cluster-{}", i + 1),
            workspace_uuid: format!("00000000-0000-4000-8000-{i:012x}"),
        }
    }
}

/// The values of the Workspace `name`'s plan.
pub fn greeting(name: &str) -> serde_json::Value {
    json!({"greeting": name})
}

/// Workspace `ws-<i>` of the benchmark `case` in organization `org-scale-<i % orgs>`, with
/// a plan sealed by `sealer` to install the demo chart onto `edge` (release namespace
/// `scale-<i>`), labelled with the case and holding the installer's finalizer, as the
/// mutating webhook leaves a create it sealed.
pub fn workspace(
    sealer: &Sealer,
    case: &str,
    i: usize,
    orgs: usize,
    edge: &BenchEdge,
) -> anyhow::Result<Workspace> {
    let org = format!("org-scale-{}", i % orgs);
    let name = format!("ws-{i:04}");
    let identity = WorkspaceIdentity {
        namespace: org.clone(),
        name: name.clone(),
        uid: String::new(),
    };
    let plan = Plan {
        drift: None,
        attempt: 1,
        attempt_id: format!("{case}-{i:04}"),
        retry: 0,
        job: providers_shared::plan::job_name(&identity, "hello", 1),
        workspace: identity,
        org: org.clone(),
        provider: "hello".into(),
        owner: Owner {
            username: "alice".into(),
            ..Default::default()
        },
        chart: ChartRef {
            repository: "http://127.0.0.1:1/charts".into(),
            name: "hello".into(),
        },
        version: "0.1.0".into(),
        release: "hello".into(),
        namespace: format!("scale-{i:04}"),
        values_digest: Some(providers_shared::plan_values::digest_of(&greeting(&name))),
        values: None,
        edge_name: edge.name.clone(),
        cluster: edge.cluster.clone(),
        edge_workspace_uuid: edge.workspace_uuid.clone(),
        execution: vec![
            installer::rule("", "configmaps"),
            installer::rule("", "serviceaccounts"),
        ],
        runtime_credential: None,
        sealed_at: Some(Time(Timestamp::now())),
        dry_run: false,
        cause: None,
        restores: None,
    };
    let mut ws = Workspace::new(
        &name,
        WorkspaceSpec {
            recipe: "hello".into(),
            edge: edge.name.clone(),
            version: None,
            values: None,
            retry: None,
            plan: Some(sealer.seal(plan)?),
        },
    );
    ws.metadata.namespace = Some(org);
    ws.metadata.labels = Some([(CASE_LABEL.to_owned(), case.to_owned())].into());
    ws.metadata.finalizers = Some(vec![
        providers_shared::installer::names::FINALIZER.to_owned(),
    ]);
    Ok(ws)
}

/// The PlanValues object the webhook would have stored for `ws`'s plan.
pub fn plan_values(ws: &Workspace) -> anyhow::Result<PlanValues> {
    let name = ws.name_any();
    let spec = providers_shared::plan_values::encode(&greeting(&name))?;
    let mut object = PlanValues::new(
        &providers_shared::plan_values::object_name(&name, &spec.digest),
        spec,
    );
    object.metadata.annotations = Some(
        [(
            providers_shared::plan_values::ANNOTATION_WORKSPACE.to_owned(),
            name,
        )]
        .into(),
    );
    Ok(object)
}

/// Sets `job` Complete, as the job controller does when its pod succeeded.
pub async fn set_complete(client: &Client, job: &Job) -> anyhow::Result<()> {
    let now = Time(Timestamp::now());
    let condition = |kind: &str| {
        json!({"type": kind, "status": "True", "reason": "CompletionsReached",
               "message": "Reached expected number of succeeded pods",
               "lastProbeTime": now, "lastTransitionTime": now})
    };
    Api::<Job>::namespaced(client.clone(), &job.namespace().unwrap_or_default())
        .patch_status(
            &job.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"startTime": now, "active": 0, "succeeded": 1,
                "completionTime": now, "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]}})),
        )
        .await
        .with_context(|| format!("setting Job {} Complete", job.name_any()))?;
    Ok(())
}

/// A field of /proc/<pid>/status in kB (`VmHWM:`, `VmRSS:`); 0 once the process is gone.
pub fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

/// User and system CPU time of a process, in seconds (from /proc, at 100 ticks a second).
pub fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU time of the etcd and kube-apiserver processes whose command line names one of the
/// control planes' folders.
pub fn planes_cpu_seconds(dirs: &[String]) -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| {
            let cmdline =
                std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            (cmdline.contains("kube-apiserver") || cmdline.contains("etcd"))
                && dirs.iter().any(|d| cmdline.contains(d.as_str()))
        })
        .map(cpu_seconds)
        .sum()
}

/// A random number below `n` (`n` > 0), from the system's random numbers; 0 if they fail.
pub fn random_below(n: usize) -> usize {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return 0;
    }
    (u64::from_le_bytes(bytes) % n.max(1) as u64) as usize
}
