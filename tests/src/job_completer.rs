//! A job controller stand-in for loads: every installer Job that appears on the edge gets
//! its terminal status at once (Complete, or Failed for a chosen share), without running
//! helm, so attempts end at the rate writes start them. It lists as well as watches, so a
//! Job created while its watch was down (an API server restart) is still ended, and it
//! remembers every Job's UID by its attempt ID: a second Job for one attempt is a second
//! run of it.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::{
    Api, Client, ResourceExt,
    api::ListParams,
    runtime::{WatchStreamExt, watcher},
};

use crate::{
    bench, installer,
    jobrunner::{SELECTOR, terminal},
};

/// The running stand-in. Dropping it stops it.
pub struct JobCompleter {
    seen: Arc<Mutex<BTreeMap<String, BTreeSet<String>>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl JobCompleter {
    /// Ends the installer's Jobs on the edge of `edge` (an admin client); a Job whose
    /// name hashes to 0 modulo `fail_every` fails (0: none fails).
    pub fn start(edge: Client, fail_every: u64) -> Self {
        let seen: Arc<Mutex<BTreeMap<String, BTreeSet<String>>>> = Arc::default();
        let api: Api<Job> = Api::all(edge.clone());
        let watch = {
            let (api, edge, seen) = (api.clone(), edge.clone(), seen.clone());
            tokio::spawn(async move {
                let config = watcher::Config::default().labels(SELECTOR);
                let mut jobs = watcher(api, config)
                    .default_backoff()
                    .applied_objects()
                    .boxed();
                while let Some(job) = jobs.next().await {
                    if let Ok(job) = job {
                        end(&edge, &seen, &job, fail_every).await;
                    }
                }
            })
        };
        let list = {
            let seen = seen.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    let params = ListParams::default().labels(SELECTOR);
                    if let Ok(list) = api.list(&params).await {
                        for job in list.items {
                            end(&edge, &seen, &job, fail_every).await;
                        }
                    }
                }
            })
        };
        Self {
            seen,
            tasks: vec![watch, list],
        }
    }

    /// Attempt IDs seen with more than one Job UID: attempts run twice.
    pub fn run_twice(&self) -> Vec<String> {
        self.seen
            .lock()
            .map(|seen| {
                seen.iter()
                    .filter(|(_, uids)| uids.len() > 1)
                    .map(|(attempt, jobs)| format!("attempt {attempt}: {jobs:?}"))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many distinct Jobs it saw.
    pub fn jobs_seen(&self) -> usize {
        self.seen.lock().map(|s| s.len()).unwrap_or(0)
    }
}

impl Drop for JobCompleter {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn end(
    edge: &Client,
    seen: &Mutex<BTreeMap<String, BTreeSet<String>>>,
    job: &Job,
    fail_every: u64,
) {
    let (namespace, name) = (job.namespace().unwrap_or_default(), job.name_any());
    // A Workspace deleted and created again under its name has Jobs of the same names: an
    // attempt is told by its ID.
    let attempt = job
        .labels()
        .get(providers_shared::installer::names::LABEL_ATTEMPT_ID)
        .cloned()
        .unwrap_or_else(|| format!("{namespace}/{name}"));
    if let Ok(mut seen) = seen.lock() {
        seen.entry(attempt).or_default().insert(format!(
            "{namespace}/{name} {}",
            job.uid().unwrap_or_default()
        ));
    }
    if terminal(job) || job.metadata.deletion_timestamp.is_some() {
        return;
    }
    let fails = fail_every > 0 && fnv(&name).is_multiple_of(fail_every);
    // A Job gone meanwhile (the installer cleaned up) needs no status.
    let _ = if fails {
        installer::fail_job(edge, &namespace, &name).await
    } else {
        bench::set_complete(edge, job).await
    };
}

/// FNV-1a of a name: the same choice for the same Job in every run.
fn fnv(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
