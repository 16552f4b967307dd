//! A steady stream of tenant writes to Workspaces, as tenants and GitOps tools make them
//! while operators restart things: creates, value changes, retries of failed attempts and
//! deletes, through the API server (and so through the admission webhook), each write's
//! outcome and latency counted.
//!
//! A pool of Workspace names is worked at a fixed rate. Each write picks a name no other
//! write holds and does what a tenant may do with it now: create it when it does not
//! exist, retry it when its attempt failed, change its values or delete it when its
//! attempt succeeded. A name whose attempt still runs is passed over (changing it would be
//! refused by design, which is not what is measured). Every refusal or error of a write is
//! a failed write.

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use providers_shared::api::{JobResult, Workspace, WorkspaceSpec};
use serde_json::json;
use tokio::task::JoinHandle;

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WriteKind {
    Create,
    ChangeValues,
    Retry,
    Delete,
}

/// One write and how it went.
#[derive(Clone, Debug)]
pub struct Write {
    pub kind: WriteKind,
    pub name: String,
    /// When it was sent, from the start of the load.
    pub sent: Duration,
    pub latency: Duration,
    /// The API server's refusal or the transport error, if it failed.
    pub error: Option<String>,
    /// Whether the API server answered it (a refusal is an answer; a connection refused
    /// while it restarts is not).
    pub answered: bool,
}

/// The load's settings.
#[derive(Clone, Debug)]
pub struct LoadSettings {
    /// Writes per second.
    pub rate: f64,
    /// Workspace names worked (`<prefix>-<i>`).
    pub pool: usize,
    pub prefix: String,
    pub namespace: String,
    pub recipe: String,
    pub edge: String,
}

/// A running load. [`WriteLoad::stop`] ends it and returns every write.
pub struct WriteLoad {
    started: Instant,
    stop: Arc<AtomicBool>,
    writes: Arc<Mutex<Vec<Write>>>,
    task: JoinHandle<()>,
}

struct Shared {
    api: Api<Workspace>,
    settings: LoadSettings,
    started: Instant,
    busy: Mutex<HashSet<usize>>,
    writes: Arc<Mutex<Vec<Write>>>,
    counter: AtomicU64,
}

impl WriteLoad {
    /// Starts writing as `tenant` (a client of the tenant's identity).
    pub fn start(tenant: Client, settings: LoadSettings) -> Self {
        let started = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let writes: Arc<Mutex<Vec<Write>>> = Arc::default();
        let shared = Arc::new(Shared {
            api: Api::namespaced(tenant, &settings.namespace),
            settings,
            started,
            busy: Mutex::default(),
            writes: writes.clone(),
            counter: AtomicU64::new(0),
        });
        let task = {
            let stop = stop.clone();
            tokio::spawn(async move {
                let period = Duration::from_secs_f64(1.0 / shared.settings.rate.max(0.1));
                let mut tick = tokio::time::interval(period);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut running = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    running.retain(|t: &JoinHandle<()>| !t.is_finished());
                    running.push(tokio::spawn(one_write(shared.clone())));
                }
                for task in running {
                    let _ = task.await;
                }
            })
        };
        Self {
            started,
            stop,
            writes,
            task,
        }
    }

    /// Time since the load started: to mark when an event began and ended.
    pub fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// Stops sending, waits for the writes in flight and returns every write.
    pub async fn stop(self) -> LoadReport {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
        let writes = self.writes.lock().map(|w| w.clone()).unwrap_or_default();
        LoadReport { writes }
    }
}

/// Picks a free name and does the write it allows; passes over names whose attempt runs.
async fn one_write(shared: Arc<Shared>) {
    for _ in 0..8 {
        let slot = crate::bench::random_below(shared.settings.pool);
        if !shared.busy.lock().is_ok_and(|mut b| b.insert(slot)) {
            continue;
        }
        let wrote = write_slot(&shared, slot).await;
        if let Ok(mut busy) = shared.busy.lock() {
            busy.remove(&slot);
        }
        if wrote {
            return;
        }
    }
}

/// Does what the name's state allows; false when it allowed nothing now.
async fn write_slot(shared: &Shared, slot: usize) -> bool {
    let name = format!("{}-{slot}", shared.settings.prefix);
    let current = match shared.api.get_opt(&name).await {
        Ok(current) => current,
        // A read is not a write: pass over the name.
        Err(_) => return false,
    };
    let n = shared.counter.fetch_add(1, Ordering::Relaxed);
    let Some(ws) = current else {
        let mut ws = Workspace::new(
            &name,
            WorkspaceSpec {
                recipe: shared.settings.recipe.clone(),
                edge: shared.settings.edge.clone(),
                version: None,
                values: Some(json!({"greeting": format!("v{n}")})),
                retry: None,
                plan: None,
            },
        );
        ws.metadata.namespace = Some(shared.settings.namespace.clone());
        let api = shared.api.clone();
        timed(shared, WriteKind::Create, &name, async move {
            api.create(&PostParams::default(), &ws).await.map(drop)
        })
        .await;
        return true;
    };
    if ws.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(result) = settled(&ws) else {
        return false;
    };
    let api = shared.api.clone();
    match result {
        JobResult::Succeeded if n.is_multiple_of(4) => {
            timed(shared, WriteKind::Delete, &name, async move {
                api.delete(&name_of(&ws), &DeleteParams::default())
                    .await
                    .map(drop)
            })
            .await
        }
        JobResult::Succeeded => {
            let patch = json!({"spec": {"values": {"greeting": format!("v{n}")}}});
            timed(shared, WriteKind::ChangeValues, &name, async move {
                api.patch(&name_of(&ws), &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map(drop)
            })
            .await
        }
        _ => {
            let patch = json!({"spec": {"retry": ws.spec.retry.unwrap_or(0) + 1}});
            timed(shared, WriteKind::Retry, &name, async move {
                api.patch(&name_of(&ws), &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map(drop)
            })
            .await
        }
    }
    true
}

fn name_of(ws: &Workspace) -> String {
    ws.metadata.name.clone().unwrap_or_default()
}

/// The result of the Workspace's current attempt, once the installer recorded it.
pub fn settled(ws: &Workspace) -> Option<JobResult> {
    let plan = ws.spec.plan.as_ref()?;
    let status = ws.status.as_ref()?;
    (status.attempt_id.as_deref() == Some(plan.plan.attempt_id.as_str()))
        .then_some(status.job_result)
        .flatten()
}

async fn timed(
    shared: &Shared,
    kind: WriteKind,
    name: &str,
    write: impl Future<Output = Result<(), kube::Error>>,
) {
    let sent = shared.started.elapsed();
    let begun = Instant::now();
    let outcome = write.await;
    let record = Write {
        kind,
        name: name.to_owned(),
        sent,
        latency: begun.elapsed(),
        answered: !matches!(&outcome, Err(e) if !matches!(e, kube::Error::Api(_))),
        error: outcome.err().map(|e| e.to_string()),
    };
    if let Ok(mut writes) = shared.writes.lock() {
        writes.push(record);
    }
}

/// Every write of a load.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    pub writes: Vec<Write>,
}

impl LoadReport {
    /// The writes that failed.
    pub fn failed(&self) -> Vec<&Write> {
        self.writes.iter().filter(|w| w.error.is_some()).collect()
    }

    /// The writes the API server refused (answered with an error).
    pub fn refused(&self) -> Vec<&Write> {
        self.writes
            .iter()
            .filter(|w| w.error.is_some() && w.answered)
            .collect()
    }

    /// The writes sent between `from` and `to`.
    pub fn between(&self, from: Duration, to: Duration) -> Vec<&Write> {
        self.writes
            .iter()
            .filter(|w| w.sent >= from && w.sent < to)
            .collect()
    }

    /// How many writes of each kind.
    pub fn counts(&self) -> Vec<(WriteKind, usize)> {
        let mut counts = std::collections::BTreeMap::new();
        for write in &self.writes {
            *counts.entry(write.kind).or_insert(0) += 1;
        }
        counts.into_iter().collect()
    }

    /// A one-line summary for logs: counts by kind, failures.
    pub fn summary(&self) -> String {
        format!(
            "{} writes ({:?}), {} failed",
            self.writes.len(),
            self.counts(),
            self.failed().len()
        )
    }
}

/// The `q` quantile (0 to 1) of the writes' latencies, in milliseconds; 0 with no writes.
pub fn latency_ms(writes: &[&Write], q: f64) -> f64 {
    let mut ms: Vec<f64> = writes
        .iter()
        .map(|w| w.latency.as_secs_f64() * 1000.0)
        .collect();
    if ms.is_empty() {
        return 0.0;
    }
    ms.sort_by(f64::total_cmp);
    let index = ((ms.len() as f64 - 1.0) * q).round() as usize;
    ms[index.min(ms.len() - 1)]
}
