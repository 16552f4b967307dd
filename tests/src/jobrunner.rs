//! The kubelet (and job controller) stand-in for an edge control plane, which has neither.
//!
//! It watches the installer's Jobs (label `app.kubernetes.io/managed-by=providers-installer`)
//! and runs each new one once:
//!
//! - **Identity**: it mints a token for the Job's ServiceAccount with the TokenRequest API
//!   and writes a kubeconfig for it, so the command runs with exactly that account's RBAC.
//!   (A Pod would read the token from `/var/run/secrets/kubernetes.io/serviceaccount`; the
//!   runner points `KUBECONFIG` at the kubeconfig instead.) While the account does not exist
//!   the Job waits, as a Pod that cannot be created would, until its deadline.
//! - **Volumes**: there is no container file system, so each volume is placed under a
//!   per-run folder (the *run root*): a mount at `/etc/providers/values` becomes
//!   `<run root>/etc/providers/values`. Secret volumes get one file per key (or per `items`
//!   entry) with the volume's mode; downwardAPI volumes one file per annotation item, as
//!   the kubelet projects them; emptyDir volumes an empty folder. Every argument and
//!   environment value that starts with a mount path is rewritten the same way (so
//!   `--values=/etc/providers/values/values.yaml` and `HOME=/tmp` point into the run root).
//! - **Command**: the container's command must be `helm`; the runner runs the real helm
//!   from `target/controlplane/bin` with the container's arguments — an argument vector,
//!   never a shell — and a clean environment (the container's `env` values, `KUBECONFIG`,
//!   `PATH`).
//! - **Status**: it sets `startTime` and `active`, then from the exit code the terminal
//!   status a job controller writes: `SuccessCriteriaMet` then `Complete` with
//!   `completionTime`, or `FailureTarget` then `Failed` (`BackoffLimitExceeded`; or
//!   `DeadlineExceeded` when `activeDeadlineSeconds` passes and the process is killed).
//!   A Job deleted while it runs has its process killed and no status written.
//!
//! - **Pods and logs**: each run has the Pod a job controller would make, bound to a Node
//!   this runner registers, with the container status and termination message a kubelet
//!   writes, and its log served through the API server's `pods/log` (`kubelet.rs`).
//!
//! Tests can hold a Job (it is not started until released), kill a running one (SIGKILL,
//! exit code 137, like a Pod killed mid-run), and read what each run did.

use std::{
    collections::{HashMap, HashSet},
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use anyhow::{Context, bail};
use futures::StreamExt;
use k8s_openapi::{
    api::{
        authentication::v1::{TokenRequest, TokenRequestSpec},
        batch::v1::Job,
        core::v1::{Container, Secret, ServiceAccount, Volume},
    },
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use serde_json::json;
use tokio::{
    io::AsyncReadExt,
    process::Command,
    sync::{Notify, oneshot},
    task::JoinHandle,
    time::Instant,
};

use crate::{binaries, controlplane::ControlPlaneInfo, kubeconfig, kubelet::Kubelet, users::User};

/// The label selector of the Jobs the runner runs.
pub const SELECTOR: &str = "app.kubernetes.io/managed-by=providers-installer";

/// What one run did.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// The argument vector helm ran with, after mount path rewriting.
    pub args: Vec<String>,
    /// The exit code; `None` while it runs or when it was killed.
    pub exit: Option<i32>,
    /// helm's standard output and error.
    pub output: String,
    /// Whether the runner killed it (test request, deadline, or Job deletion).
    pub killed: bool,
    /// The values files the Job's Secret volumes held, by mount path and file name.
    pub files: HashMap<String, String>,
}

#[derive(Default)]
struct Registry {
    holds: HashSet<String>,
    held: HashMap<String, Job>,
    started: HashSet<String>,
    kills: HashMap<String, oneshot::Sender<()>>,
    runs: HashMap<String, Run>,
}

struct Inner {
    edge: ControlPlaneInfo,
    admin: Client,
    kubelet: Kubelet,
    helm: PathBuf,
    root: tempfile::TempDir,
    registry: Mutex<Registry>,
    /// Set by [`JobRunner::stop`]: the edge may go away from then on, so what fails
    /// after it is the end of the runner, not an error to report.
    stopping: AtomicBool,
    stop: Notify,
}

impl Inner {
    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

/// A running job runner. Dropping it stops the watch (running processes are killed);
/// [`JobRunner::stop`] stops it quietly before the edge's API server goes away.
pub struct JobRunner {
    inner: Arc<Inner>,
    watch: JoinHandle<()>,
}

fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl JobRunner {
    /// Starts watching the edge's Jobs. Call it inside the Tokio runtime that should run it.
    pub async fn start(edge: &ControlPlaneInfo) -> anyhow::Result<Self> {
        let admin = edge.client(User::Admin).await?;
        let inner = Arc::new(Inner {
            edge: edge.clone(),
            kubelet: Kubelet::start(&edge.name, admin.clone()).await?,
            admin,
            helm: binaries::path("helm")?,
            root: tempfile::Builder::new()
                .prefix("providers-jobrunner-")
                .tempdir()?,
            registry: Mutex::new(Registry::default()),
            stopping: AtomicBool::new(false),
            stop: Notify::new(),
        });
        let watch = tokio::spawn(watch(inner.clone()));
        Ok(Self { inner, watch })
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner
            .registry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Jobs named `name` (in any namespace) are not started until [`JobRunner::release`].
    pub fn hold(&self, name: &str) {
        self.registry().holds.insert(name.to_owned());
    }

    /// Starts a held Job (now, if it already appeared).
    pub fn release(&self, name: &str) {
        let job = {
            let mut registry = self.registry();
            registry.holds.remove(name);
            let found = registry
                .held
                .keys()
                .find(|k| k.ends_with(&format!("/{name}")))
                .cloned();
            found.and_then(|k| registry.held.remove(&k))
        };
        if let Some(job) = job {
            start(self.inner.clone(), job);
        }
    }

    /// Whether a held Job has appeared.
    pub fn is_held(&self, namespace: &str, name: &str) -> bool {
        self.registry().held.contains_key(&key(namespace, name))
    }

    /// Kills the helm process of a running Job (SIGKILL); whether one was running.
    pub fn kill(&self, namespace: &str, name: &str) -> bool {
        let sender = self.registry().kills.remove(&key(namespace, name));
        sender.is_some_and(|s| s.send(()).is_ok())
    }

    /// What the run of a Job did so far, if it was started.
    pub fn run(&self, namespace: &str, name: &str) -> Option<Run> {
        self.registry().runs.get(&key(namespace, name)).cloned()
    }

    /// How many Jobs the runner started.
    pub fn started(&self) -> usize {
        self.registry().started.len()
    }

    /// Stops watching and listing Jobs and kills the helm processes still running, then
    /// returns once the watch has ended. Call it before the edge's API server stops: a
    /// request the runner makes after this is not reported when it fails, since the edge
    /// going away is expected, while until this is called every failure is.
    pub async fn stop(&mut self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        self.inner.stop.notify_one();
        let kills: Vec<_> = self
            .registry()
            .kills
            .drain()
            .map(|(_, kill)| kill)
            .collect();
        for kill in kills {
            let _ = kill.send(());
        }
        if let Err(error) = (&mut self.watch).await
            && !error.is_cancelled()
        {
            eprintln!("jobrunner: the watch of Jobs ended with {error}");
        }
    }
}

impl Drop for JobRunner {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

/// Runs the Jobs the watch brings, and those a list every few seconds finds not yet
/// started: a job controller resyncs too, so a watch event that never arrives (seen
/// rarely under load: a Job left without status for minutes) delays a Job, never loses it.
async fn watch(inner: Arc<Inner>) {
    let api: Api<Job> = Api::all(inner.admin.clone());
    let mut events = watcher(api.clone(), watcher::Config::default().labels(SELECTOR))
        .default_backoff()
        .applied_objects()
        .boxed();
    let mut resync = tokio::time::interval(RESYNC);
    resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            // Ahead of the watch and the list: once stopping, neither is polled again.
            biased;
            () = inner.stop.notified() => return,
            event = events.next() => match event {
                Some(Ok(job)) => consider(&inner, job, "watch"),
                Some(Err(_)) if inner.stopping() => return,
                Some(Err(error)) => eprintln!("jobrunner: watching Jobs: {error}"),
                None => return,
            },
            _ = resync.tick() => {
                match api.list(&ListParams::default().labels(SELECTOR)).await {
                    Ok(jobs) => {
                        for job in jobs.items {
                            consider(&inner, job, "resync");
                        }
                    }
                    Err(_) if inner.stopping() => return,
                    Err(error) => eprintln!("jobrunner: listing Jobs: {error}"),
                }
            }
        }
    }
}

/// The longest a request of a run may take before it is tried again.
const REQUEST: Duration = Duration::from_secs(15);

/// How often the runner lists the Jobs besides watching them.
const RESYNC: Duration = Duration::from_secs(3);

/// Starts `job` unless it ended, is going, was started or is held, or the runner stops.
fn consider(inner: &Arc<Inner>, job: Job, seen_by: &str) {
    if inner.stopping() || job.metadata.deletion_timestamp.is_some() || terminal(&job) {
        return;
    }
    let uid = job.uid().unwrap_or_default();
    let k = key(&job.namespace().unwrap_or_default(), &job.name_any());
    {
        let mut registry = inner
            .registry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if registry.started.contains(&uid) || registry.held.contains_key(&k) {
            return;
        }
        if registry.holds.contains(&job.name_any()) {
            registry.held.insert(k, job);
            return;
        }
    }
    if seen_by == "resync" {
        eprintln!("jobrunner: Job {k} was found by a list, not by the watch");
    }
    start(inner.clone(), job);
}

/// Whether a Job has its terminal status (Complete or Failed).
pub(crate) fn terminal(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        })
}

fn start(inner: Arc<Inner>, job: Job) {
    let uid = job.uid().unwrap_or_default();
    {
        let mut registry = inner
            .registry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !registry.started.insert(uid) {
            return;
        }
    }
    tokio::spawn(async move {
        let name = job.name_any();
        if let Err(error) = run_job(&inner, job).await
            && !inner.stopping()
        {
            eprintln!("jobrunner: Job {name}: {error:#}");
        }
    });
}

/// How a run ended.
enum Ending {
    Exited(i32),
    Killed,
    DeadlineExceeded,
    Deleted,
}

async fn run_job(inner: &Arc<Inner>, job: Job) -> anyhow::Result<()> {
    let namespace = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let uid = job.uid().unwrap_or_default();
    // A client of its own per run, with every request bounded: two CI runs left a Job
    // without a run record for minutes, once before its start time was written and once
    // after, with no error: a request of the shared client that never came back. One
    // stuck connection now costs one run a retry, not every later run.
    let admin = inner
        .edge
        .client(User::Admin)
        .await
        .context("a client for the run")?;
    let jobs: Api<Job> = Api::namespaced(admin.clone(), &namespace);
    let started_at = Timestamp::now();
    let started = Instant::now();
    let start = Patch::Merge(json!({"status": {"startTime": Time(started_at), "active": 1}}));
    let params = PatchParams::default();
    bounded(&namespace, &name, "setting startTime", || {
        jobs.patch_status(&name, &params, &start)
    })
    .await?;
    let spec = job.spec.clone().context("the Job has no spec")?;
    let deadline = spec
        .active_deadline_seconds
        .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)));
    let pod = spec
        .template
        .spec
        .clone()
        .context("the Job has no Pod spec")?;
    let container = pod
        .containers
        .first()
        .context("the Pod has no container")?
        .clone();
    let account = pod
        .service_account_name
        .clone()
        .unwrap_or_else(|| "default".into());

    let run_root = inner
        .root
        .path()
        .join(&namespace)
        .join(format!("{name}-{}", &uid[..uid.len().min(8)]));
    std::fs::create_dir_all(&run_root)?;
    let (kill_tx, kill_rx) = oneshot::channel();
    inner
        .registry
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .kills
        .insert(key(&namespace, &name), kill_tx);

    let annotations = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    let ending = match prepare(
        inner,
        &namespace,
        &account,
        &container,
        pod.volumes.as_deref().unwrap_or_default(),
        &annotations,
        &run_root,
        &jobs,
        &name,
        &uid,
        deadline,
        started,
    )
    .await?
    {
        Prepared::Ready { args, env, files } => {
            record(inner, &namespace, &name, |run| {
                run.args = args.clone();
                run.files = files.clone();
            });
            // A job controller makes the Pod before anything runs, and tries again until
            // it exists.
            let pod = bounded(&namespace, &name, "creating the runner Pod", || {
                inner.kubelet.create_pod(&admin, &job)
            })
            .await?;
            let ending = execute(
                inner, &namespace, &name, &uid, &args, &env, &run_root, &jobs, deadline, started,
                kill_rx,
            )
            .await?;
            {
                let exit = match ending {
                    Ending::Exited(code) => Some(code),
                    Ending::Killed | Ending::DeadlineExceeded => Some(137),
                    Ending::Deleted => None,
                };
                let output = inner
                    .registry
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .runs
                    .get(&key(&namespace, &name))
                    .map(|run| run.output.clone())
                    .unwrap_or_default();
                // A job controller writes the Job's end only after the kubelet wrote the
                // Pod's: whoever reads the Pod of a failed Job finds helm's words there.
                if let Some(exit) = exit {
                    bounded(&namespace, &name, "the runner Pod's status", || {
                        inner
                            .kubelet
                            .finish_pod(&admin, &namespace, &pod, exit, &output, started_at)
                    })
                    .await?;
                }
            }
            ending
        }
        Prepared::Gone => Ending::Deleted,
        Prepared::DeadlineExceeded => Ending::DeadlineExceeded,
    };
    inner
        .registry
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .kills
        .remove(&key(&namespace, &name));
    let now = Time(Timestamp::now());
    let failed = |reason: &str, message: &str| {
        json!({"status": {
            "active": 0,
            "failed": 1,
            "conditions": [
                {"type": "FailureTarget", "status": "True", "reason": reason, "message": message,
                 "lastProbeTime": now, "lastTransitionTime": now},
                {"type": "Failed", "status": "True", "reason": reason, "message": message,
                 "lastProbeTime": now, "lastTransitionTime": now},
            ],
        }})
    };
    let status = match ending {
        Ending::Deleted => return Ok(()),
        Ending::Exited(0) => json!({"status": {
            "active": 0,
            "succeeded": 1,
            "completionTime": now,
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
                 "message": "Reached expected number of succeeded pods",
                 "lastProbeTime": now, "lastTransitionTime": now},
                {"type": "Complete", "status": "True", "reason": "CompletionsReached",
                 "message": "Reached expected number of succeeded pods",
                 "lastProbeTime": now, "lastTransitionTime": now},
            ],
        }}),
        Ending::Exited(_) | Ending::Killed => failed(
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        ),
        Ending::DeadlineExceeded => failed(
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
        ),
    };
    let status = Patch::Merge(status);
    bounded(&namespace, &name, "writing the terminal status", || {
        jobs.patch_status(&name, &params, &status)
    })
    .await?;
    Ok(())
}

/// `request`, tried up to three times, each bounded by [`REQUEST`]: a request lost on a
/// loaded machine costs a retry, not the run's record.
async fn bounded<T, E, F, Fut>(
    namespace: &str,
    name: &str,
    what: &str,
    request: F,
) -> anyhow::Result<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
    E: Into<anyhow::Error>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match tokio::time::timeout(REQUEST, request()).await {
            Ok(Ok(answer)) => return Ok(answer),
            Ok(Err(error)) if tries >= 3 => return Err(error.into()).context(what.to_owned()),
            Err(_) if tries >= 3 => bail!("{what}: no answer in {REQUEST:?}, {tries} times"),
            Ok(Err(error)) => {
                let error: anyhow::Error = error.into();
                eprintln!("jobrunner: Job {namespace}/{name}: {what}: {error:#}; again");
            }
            Err(_) => eprintln!(
                "jobrunner: Job {namespace}/{name}: {what}: no answer in {REQUEST:?}; again"
            ),
        }
    }
}

enum Prepared {
    Ready {
        args: Vec<String>,
        env: Vec<(String, String)>,
        files: HashMap<String, String>,
    },
    Gone,
    DeadlineExceeded,
}

#[allow(clippy::too_many_arguments)]
async fn prepare(
    inner: &Inner,
    namespace: &str,
    account: &str,
    container: &Container,
    volumes: &[Volume],
    annotations: &std::collections::BTreeMap<String, String>,
    run_root: &Path,
    jobs: &Api<Job>,
    name: &str,
    uid: &str,
    deadline: Option<Duration>,
    started: Instant,
) -> anyhow::Result<Prepared> {
    if container.command.as_deref() != Some(&["helm".to_owned()][..]) {
        bail!(
            "the runner only runs `helm`; the container's command is {:?}",
            container.command
        );
    }
    // The ServiceAccount's token, as the kubelet would project it.
    let accounts: Api<ServiceAccount> = Api::namespaced(jobs.clone().into_client(), namespace);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        }),
        ..Default::default()
    };
    let token = loop {
        let answer = tokio::time::timeout(
            REQUEST,
            accounts.create_token_request(account, &PostParams::default(), &request),
        )
        .await
        .unwrap_or_else(|_| {
            Err(kube::Error::Service(
                format!("no answer in {REQUEST:?}").into(),
            ))
        });
        match answer {
            Ok(answer) => break answer.status.and_then(|s| s.token).unwrap_or_default(),
            Err(error) => {
                if !still_there(jobs, name, uid).await {
                    return Ok(Prepared::Gone);
                }
                if deadline.is_some_and(|d| started.elapsed() >= d) {
                    return Ok(Prepared::DeadlineExceeded);
                }
                eprintln!("jobrunner: Job {namespace}/{name}: no token for {account} yet: {error}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    };
    let token_dir = run_root.join("var/run/secrets/kubernetes.io/serviceaccount");
    std::fs::create_dir_all(&token_dir)?;
    let kubeconfig_path = token_dir.join("kubeconfig");
    kubeconfig::write(
        &kubeconfig_path,
        &inner.edge.name,
        &inner.edge.server,
        &inner.edge.ca_pem()?,
        account,
        &token,
        Some(namespace),
    )?;

    // Volumes at their mount paths under the run root.
    let mounts: Vec<(String, PathBuf)> = container
        .volume_mounts
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|m| (m.mount_path.clone(), under(run_root, &m.mount_path)))
        .collect();
    let mut files = HashMap::new();
    for mount in container.volume_mounts.as_deref().unwrap_or_default() {
        let volume = volumes
            .iter()
            .find(|v| v.name == mount.name)
            .with_context(|| format!("no volume {} for mount {}", mount.name, mount.mount_path))?;
        let target = under(run_root, &mount.mount_path);
        std::fs::create_dir_all(&target)?;
        if let Some(source) = &volume.secret {
            let secret_name = source.secret_name.clone().unwrap_or_default();
            let secrets: Api<Secret> = Api::namespaced(jobs.clone().into_client(), namespace);
            let secret = loop {
                match secrets.get_opt(&secret_name).await? {
                    Some(secret) => break secret,
                    None if !still_there(jobs, name, uid).await => return Ok(Prepared::Gone),
                    None if deadline.is_some_and(|d| started.elapsed() >= d) => {
                        return Ok(Prepared::DeadlineExceeded);
                    }
                    None => tokio::time::sleep(Duration::from_millis(500)).await,
                }
            };
            let data = secret.data.unwrap_or_default();
            let mode = source.default_mode.unwrap_or(0o644);
            let items: Vec<(String, String)> = match &source.items {
                Some(items) => items
                    .iter()
                    .map(|i| (i.key.clone(), i.path.clone()))
                    .collect(),
                None => data.keys().map(|k| (k.clone(), k.clone())).collect(),
            };
            for (key, path) in items {
                let bytes = data.get(&key).map(|b| b.0.clone()).unwrap_or_default();
                let file = target.join(&path);
                std::fs::write(&file, &bytes)?;
                let mode = u32::try_from(mode).unwrap_or(0o644) | 0o600;
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode))?;
                files.insert(
                    format!("{}/{path}", mount.mount_path.trim_end_matches('/')),
                    String::from_utf8_lossy(&bytes).into_owned(),
                );
            }
        } else if let Some(source) = &volume.downward_api {
            // The kubelet projects the Pod's own fields; only annotations are used here.
            let mode = source.default_mode.unwrap_or(0o644);
            for item in source.items.as_deref().unwrap_or_default() {
                let field = item
                    .field_ref
                    .as_ref()
                    .map(|f| f.field_path.as_str())
                    .unwrap_or_default();
                let Some(key) = field
                    .strip_prefix("metadata.annotations['")
                    .and_then(|k| k.strip_suffix("']"))
                else {
                    bail!("downwardAPI item {field:?}: the runner projects only annotations");
                };
                let text = annotations.get(key).cloned().unwrap_or_default();
                let file = target.join(&item.path);
                std::fs::write(&file, text.as_bytes())?;
                let mode = u32::try_from(item.mode.unwrap_or(mode)).unwrap_or(0o644) | 0o600;
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode))?;
                files.insert(
                    format!("{}/{}", mount.mount_path.trim_end_matches('/'), item.path),
                    text,
                );
            }
        } else if volume.empty_dir.is_none() {
            bail!(
                "volume {} is not a Secret, a downwardAPI or an emptyDir; the runner supports only those",
                volume.name
            );
        }
    }
    let rewrite_path = |value: &str| -> String {
        mounts
            .iter()
            .filter(|(path, _)| {
                value == path || value.starts_with(&format!("{}/", path.trim_end_matches('/')))
            })
            .max_by_key(|(path, _)| path.len())
            .map(|(path, local)| format!("{}{}", local.display(), &value[path.len()..]))
            .unwrap_or_else(|| value.to_owned())
    };
    // A path alone, or the value of a `--flag=path` argument.
    let rewrite = |value: &str| -> String {
        match value.split_once('=') {
            Some((flag, path)) if flag.starts_with("--") => {
                format!("{flag}={}", rewrite_path(path))
            }
            _ => rewrite_path(value),
        }
    };
    let args: Vec<String> = container
        .args
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|a| rewrite(a))
        .collect();
    let mut env = Vec::new();
    for var in container.env.as_deref().unwrap_or_default() {
        let Some(value) = &var.value else {
            bail!(
                "env {} uses valueFrom, which the runner does not support",
                var.name
            );
        };
        env.push((var.name.clone(), rewrite(value)));
    }
    env.push(("KUBECONFIG".into(), kubeconfig_path.display().to_string()));
    let helm_dir = inner
        .helm
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    env.push(("PATH".into(), format!("{helm_dir}:/usr/bin:/bin")));
    Ok(Prepared::Ready { args, env, files })
}

#[allow(clippy::too_many_arguments)]
async fn execute(
    inner: &Inner,
    namespace: &str,
    name: &str,
    uid: &str,
    args: &[String],
    env: &[(String, String)],
    run_root: &Path,
    jobs: &Api<Job>,
    deadline: Option<Duration>,
    started: Instant,
    mut kill: oneshot::Receiver<()>,
) -> anyhow::Result<Ending> {
    let mut child = Command::new(&inner.helm)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(run_root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting helm")?;
    let mut stdout = child.stdout.take().context("stdout")?;
    let mut stderr = child.stderr.take().context("stderr")?;
    let output = tokio::spawn(async move {
        let mut out = String::new();
        let mut err = String::new();
        let _ = tokio::join!(
            stdout.read_to_string(&mut out),
            stderr.read_to_string(&mut err)
        );
        format!("{out}{err}")
    });
    let deadline_left = deadline.map(|d| d.saturating_sub(started.elapsed()));
    let expired = async {
        match deadline_left {
            Some(left) => tokio::time::sleep(left).await,
            None => std::future::pending().await,
        }
    };
    let deleted = async {
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            if !still_there(jobs, name, uid).await {
                return;
            }
        }
    };
    let ending = tokio::select! {
        status = child.wait() => Ending::Exited(status?.code().unwrap_or(-1)),
        _ = &mut kill => { let _ = child.kill().await; Ending::Killed }
        () = expired => { let _ = child.kill().await; Ending::DeadlineExceeded }
        () = deleted => { let _ = child.kill().await; Ending::Deleted }
    };
    let text = output.await.unwrap_or_default();
    record(inner, namespace, name, |run| {
        run.output = text.clone();
        match ending {
            Ending::Exited(code) => run.exit = Some(code),
            _ => run.killed = true,
        }
    });
    Ok(ending)
}

/// Whether the Job still exists, is not being deleted, and is the same object.
async fn still_there(jobs: &Api<Job>, name: &str, uid: &str) -> bool {
    match jobs.get_opt(name).await {
        Ok(Some(job)) => {
            job.metadata.deletion_timestamp.is_none() && job.metadata.uid.as_deref() == Some(uid)
        }
        Ok(None) => false,
        // Cannot tell: keep running, as a kubelet cut off from its API server would.
        Err(_) => true,
    }
}

fn record(inner: &Inner, namespace: &str, name: &str, change: impl FnOnce(&mut Run)) {
    let mut registry = inner
        .registry
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    change(registry.runs.entry(key(namespace, name)).or_default());
}

/// An absolute container path under the run root.
fn under(run_root: &Path, path: &str) -> PathBuf {
    run_root.join(path.trim_start_matches('/'))
}
