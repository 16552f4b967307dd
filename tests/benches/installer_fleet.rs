//! The installer shared out over replicas (ADR 40, docs/performance.md "Edges shared over
//! replicas"): many Edges, thousands of Workspaces, several replicas on
//! local control planes, with the shipped Lease timing (15 s, renew deadline 10 s, retry
//! 2 s).
//!
//! `cargo build --release --workspace --bins && cargo bench -p providers-tests --bench
//! installer_fleet`. Settings, from the environment:
//! - `PROVIDERS_FLEET_WORKSPACES` (3000), `PROVIDERS_FLEET_EDGES` (12 Edge objects) over
//!   `PROVIDERS_FLEET_PLANES` (3 edge API servers; Edge `i` points at server `i % planes`
//!   with a cluster ID of its own, each Workspace a release namespace of its own there);
//! - `PROVIDERS_FLEET_REPLICAS` (3) installer processes;
//! - `PROVIDERS_FLEET_CREATE_RATE`: Workspaces created per second (0, the default: as fast
//!   as 32 requests in flight go);
//! - `PROVIDERS_FLEET_KILL_EVERY`: 0 (the default) measures a quiet fleet: every
//!   Workspace created, then every Job set Complete once all exist. Above 0, chaos: a random
//!   replica is killed (SIGKILL) every that many seconds and a new one started in its place
//!   under a new name (as a Deployment replaces a pod), while Jobs are set Complete as they
//!   appear, until every attempt has its result.
//!
//! The Jobs' terminal status is set directly, as a job controller would. At the end it
//! checks what must hold across moves: every Workspace Ready with its Job recorded and its
//! attempt cleaned up, exactly one Job per attempt on the edges, no runner identity
//! (ServiceAccount, Role, RoleBinding) left. For each kill it measures how long until
//! every edge the killed replica held is held by another (the fencing Leases) and until
//! that replica's Edge status names it (its probe ran: its edge worker and caches are up).
//! The last line, on stdout, sums up for scripts:
//! `installer_fleet workspaces=N edges=E replicas=R kills=K jobs_s=.. done_s=..
//! takeover_median_s=.. takeover_max_s=.. working_median_s=.. working_max_s=..
//! rss_max_mb=.. rss_sum_mb=.. cpu_sum_s=.. planes_cpu_s=..`, with one line per replica
//! before it on stderr.

use std::{
    collections::{BTreeMap, HashSet},
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, ensure};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::{
    batch::v1::Job,
    coordination::v1::Lease,
    core::v1::{Namespace, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ListParams, PostParams},
};
use providers_shared::{
    api::{Edge, PlanValues, Workspace},
    installer::edge_owners::edge_lease,
    seal::Sealer,
};
use providers_tests::{
    ControlPlaneInfo, User,
    bench::{self, BenchEdge},
    installer::{self, CASE_LABEL, ControllerOptions, ControllerProcess, SYSTEM},
    platform,
};
use serde_json::json;
use tokio::sync::Mutex;

const ORGS: usize = 10;
const IN_FLIGHT: usize = 32;
const CASE: &str = "fleet";
const LEASE: &str = "lease-fleet";
/// The shipped Lease timing (webhook/src/cli.rs).
const SHIPPED_LEASES: [u64; 3] = [15, 10, 2];

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One installer replica while it runs, and what it cost once it is gone.
struct Replica {
    process: ControllerProcess,
    pid: u32,
    most_edges: usize,
}

#[derive(Debug)]
struct ReplicaFigures {
    identity: String,
    cpu_s: f64,
    peak_rss_mb: f64,
    most_edges: usize,
    killed: bool,
    /// The watches it held on the edges, from its metrics.
    watches: String,
}

impl Replica {
    async fn start(hub: &ControlPlaneInfo, identity: &str) -> anyhow::Result<Self> {
        let process = ControllerProcess::start(
            hub,
            ControllerOptions {
                lease_timing: SHIPPED_LEASES,
                args: vec![
                    "--concurrency".into(),
                    "32".into(),
                    "--drift-interval".into(),
                    "0".into(),
                ],
                ..ControllerOptions::new(CASE, identity, LEASE)
            },
        )
        .await?;
        let pid = process.pid().context("the replica runs")?;
        Ok(Self {
            process,
            pid,
            most_edges: 0,
        })
    }

    async fn figures(&self, killed: bool) -> ReplicaFigures {
        let metrics = self.process.scrape().await.unwrap_or_default();
        let gauge = |name: &str| -> u64 {
            metrics
                .lines()
                .filter(|line| line.starts_with(name))
                .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
                .sum::<f64>() as u64
        };
        ReplicaFigures {
            watches: format!(
                "namespace watches {}, follow watches {}",
                gauge("providers_installer_edge_namespace_watches{"),
                gauge("providers_installer_edge_follow_watches{")
            ),
            identity: self.process.identity.clone(),
            cpu_s: bench::cpu_seconds(self.pid),
            peak_rss_mb: bench::status_kb(self.pid, "VmHWM:") as f64 / 1024.0,
            most_edges: self.most_edges,
            killed,
        }
    }
}

/// Each edge's fencing Lease holder.
async fn holders(hub: &Client, edges: &[BenchEdge]) -> anyhow::Result<BTreeMap<String, String>> {
    let leases = Api::<Lease>::namespaced(hub.clone(), SYSTEM)
        .list(&ListParams::default())
        .await?;
    let mut by_name: BTreeMap<String, String> = leases
        .items
        .into_iter()
        .filter_map(|l| Some((l.name_any(), l.spec?.holder_identity?)))
        .collect();
    Ok(edges
        .iter()
        .filter_map(|e| {
            by_name
                .remove(&edge_lease(LEASE, &e.name))
                .map(|h| (e.name.clone(), h))
        })
        .collect())
}

/// Each Edge's `status.installer`.
async fn working(hub: &Client) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(Api::<Edge>::all(hub.clone())
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|e| Some((e.name_any(), e.status?.installer?)))
        .collect())
}

/// What one kill cost: seconds until every edge the victim held had another holder, and
/// until each of those edges' status named its new holder.
struct Takeover {
    leases_s: f64,
    working_s: f64,
    edges: usize,
}

async fn measure_takeover(
    hub: &Client,
    edges: &[BenchEdge],
    victim: &str,
    held: &[String],
    since: Instant,
) -> anyhow::Result<Takeover> {
    let mut leases_s = None;
    loop {
        let now = holders(hub, edges).await?;
        let taken = held.iter().all(|e| now.get(e).is_some_and(|h| h != victim));
        if taken && leases_s.is_none() {
            leases_s = Some(since.elapsed().as_secs_f64());
        }
        if let Some(leases_s) = leases_s {
            let status = working(hub).await?;
            if held
                .iter()
                .all(|e| status.get(e).is_some_and(|w| Some(w) == now.get(e)))
            {
                return Ok(Takeover {
                    leases_s,
                    working_s: since.elapsed().as_secs_f64(),
                    edges: held.len(),
                });
            }
        }
        ensure!(
            since.elapsed() < Duration::from_secs(120),
            "{victim}'s edges {held:?} not taken over within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sets every Job of the benchmark that has no verdict yet Complete; the count it set.
async fn complete_new_jobs(
    edge_clients: &[Client],
    done: &Mutex<HashSet<String>>,
) -> anyhow::Result<usize> {
    let mut set = 0;
    for client in edge_clients {
        let jobs = Api::<Job>::all(client.clone())
            .list(&ListParams::default().labels(providers_tests::jobrunner::SELECTOR))
            .await?;
        let fresh: Vec<Job> = {
            let done = done.lock().await;
            jobs.items
                .into_iter()
                .filter(|j| {
                    j.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0) == 0
                        && !done.contains(&j.uid().unwrap_or_default())
                })
                .collect()
        };
        stream::iter(fresh.clone())
            .map(|job| {
                let client = client.clone();
                async move { bench::set_complete(&client, &job).await }
            })
            .buffer_unordered(IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await?;
        let mut done = done.lock().await;
        for job in &fresh {
            done.insert(job.uid().unwrap_or_default());
        }
        set += fresh.len();
    }
    Ok(set)
}

/// Jobs of the benchmark on every edge API server.
async fn count_jobs(edge_clients: &[Client]) -> anyhow::Result<usize> {
    let mut total = 0;
    for client in edge_clients {
        total += Api::<Job>::all(client.clone())
            .list_metadata(&ListParams::default().labels(providers_tests::jobrunner::SELECTOR))
            .await?
            .items
            .len();
    }
    Ok(total)
}

/// Runner ServiceAccounts, Roles and RoleBindings left on every edge API server.
async fn runner_identities_left(edge_clients: &[Client]) -> anyhow::Result<usize> {
    async fn runners<K>(client: &Client) -> anyhow::Result<usize>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        Ok(Api::<K>::all(client.clone())
            .list_metadata(&ListParams::default().labels(providers_tests::jobrunner::SELECTOR))
            .await?
            .items
            .iter()
            .filter(|o| o.name_any().ends_with("-runner"))
            .count())
    }
    let mut left = 0;
    for client in edge_clients {
        left += runners::<ServiceAccount>(client).await?;
        left += runners::<Role>(client).await?;
        left += runners::<RoleBinding>(client).await?;
    }
    Ok(left)
}

/// Waits until `count` Workspaces of the benchmark say `cleanedUp`, from one watch.
async fn every_cleaned_up(api: Api<Workspace>, count: usize) -> anyhow::Result<()> {
    use kube::runtime::{WatchStreamExt, watcher};
    let config = watcher::Config::default().labels(&format!("{CASE_LABEL}={CASE}"));
    let mut cleaned = HashSet::new();
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

/// A random index below `n`.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let count = setting("PROVIDERS_FLEET_WORKSPACES", 3000) as usize;
    let edge_count = setting("PROVIDERS_FLEET_EDGES", 12) as usize;
    let plane_count = setting("PROVIDERS_FLEET_PLANES", 3).max(1) as usize;
    let replica_count = setting("PROVIDERS_FLEET_REPLICAS", 3).max(1) as usize;
    let create_rate = setting("PROVIDERS_FLEET_CREATE_RATE", 0);
    let kill_every = setting("PROVIDERS_FLEET_KILL_EVERY", 0);
    let bin = Path::new(env!("CARGO_BIN_EXE_providers-controlplane")).to_path_buf();
    let started = Instant::now();
    let supervised = bench::start_planes(
        &bin,
        std::iter::once("hub".to_owned())
            .chain((0..plane_count).map(|i| format!("edge-plane-{i}"))),
    )
    .await?;
    let hub = supervised[0].info.clone();
    let edge_planes: Vec<_> = supervised[1..].iter().map(|s| s.info.clone()).collect();
    let sealer = Sealer::from_seed([9; 32]);
    bench::install_platform(&hub, &sealer).await?;
    let admin = hub.client(User::Admin).await?;
    let edges: Vec<BenchEdge> = (0..edge_count).map(BenchEdge::numbered).collect();
    for (i, edge) in edges.iter().enumerate() {
        installer::register_edge(
            &hub,
            &edge_planes[i % plane_count],
            &edge.name,
            &edge.cluster,
            &edge.workspace_uuid,
            None,
        )
        .await?;
        platform::grant_install(&admin, "alice", &edge.name).await?;
    }
    for org in 0..ORGS {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": format!("org-scale-{org}")}}))?;
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &ns)
            .await?;
    }
    let mut edge_clients = Vec::new();
    for plane in &edge_planes {
        edge_clients.push(plane.client(User::Admin).await?);
    }
    eprintln!(
        "setup ({} control planes, {edge_count} Edges) took {:?}",
        plane_count + 1,
        started.elapsed()
    );

    let replicas: Arc<Mutex<Vec<Replica>>> = Arc::new(Mutex::new(Vec::new()));
    for n in 0..replica_count {
        let replica = Replica::start(&hub, &format!("fleet-{n}")).await?;
        replicas.lock().await.push(replica);
    }
    let mut next_name = replica_count;
    installer::eventually(
        "every edge held and Ready",
        Duration::from_secs(120),
        || async {
            let held = holders(&admin, &edges).await?;
            let ready = Api::<Edge>::all(admin.clone())
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|e| e.status.as_ref().is_some_and(|s| s.ready))
                .count();
            Ok((held.len() == edge_count && ready == edge_count).then_some(()))
        },
    )
    .await?;
    eprintln!("{replica_count} replicas hold the {edge_count} edges");

    // Each Workspace is sealed right before its create, as the webhook seals it: a plan
    // sealed long before its Workspace's creation is refused (SealInvalid).
    let sealer = Arc::new(sealer);
    let seal = {
        let (sealer, edges) = (sealer.clone(), edges.clone());
        move |i: usize| bench::workspace(&sealer, CASE, i, ORGS, &edges[i % edge_count])
    };
    let workspaces: Vec<Workspace> = (0..count).map(&seal).collect::<anyhow::Result<_>>()?;
    stream::iter(&workspaces)
        .map(|ws| {
            let admin = admin.clone();
            async move {
                Api::<PlanValues>::namespaced(admin, &ws.namespace().unwrap_or_default())
                    .create(&PostParams::default(), &bench::plan_values(ws)?)
                    .await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;

    let plane_dirs: Vec<String> = std::iter::once(&hub)
        .chain(edge_planes.iter())
        .map(|p| p.dir.display().to_string())
        .collect();
    let planes_cpu_before = bench::planes_cpu_seconds(&plane_dirs);
    let finished = Arc::new(AtomicBool::new(false));
    let completed_jobs = Arc::new(Mutex::new(HashSet::new()));

    // Edges held per replica, sampled every second (the most each held).
    let sampler = {
        let (admin, edges, replicas, finished) = (
            admin.clone(),
            edges.clone(),
            replicas.clone(),
            finished.clone(),
        );
        tokio::spawn(async move {
            while !finished.load(Ordering::Relaxed) {
                if let Ok(held) = holders(&admin, &edges).await {
                    for replica in replicas.lock().await.iter_mut() {
                        let mine = held
                            .values()
                            .filter(|h| **h == replica.process.identity)
                            .count();
                        replica.most_edges = replica.most_edges.max(mine);
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    };
    // Under chaos, Jobs get their verdict as they appear.
    let completer = (kill_every > 0).then(|| {
        let (edge_clients, finished, done) = (
            edge_clients.clone(),
            finished.clone(),
            completed_jobs.clone(),
        );
        tokio::spawn(async move {
            while !finished.load(Ordering::Relaxed) {
                if let Err(e) = complete_new_jobs(&edge_clients, &done).await {
                    eprintln!("setting Jobs Complete: {e:#} (tried again)");
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    });

    let t0 = Instant::now();
    let creator = {
        let admin = admin.clone();
        tokio::spawn(async move {
            if create_rate == 0 {
                stream::iter(0..count)
                    .map(|i| {
                        let admin = admin.clone();
                        let ws = seal(i);
                        async move {
                            let ws = ws?;
                            Api::<Workspace>::namespaced(
                                admin,
                                &ws.namespace().unwrap_or_default(),
                            )
                            .create(&PostParams::default(), &ws)
                            .await?;
                            anyhow::Ok(())
                        }
                    })
                    .buffer_unordered(IN_FLIGHT)
                    .try_collect::<Vec<()>>()
                    .await?;
            } else {
                let mut tick =
                    tokio::time::interval(Duration::from_secs_f64(1.0 / create_rate as f64));
                let mut creates = Vec::new();
                for i in 0..count {
                    tick.tick().await;
                    let admin = admin.clone();
                    let ws = seal(i)?;
                    creates.push(tokio::spawn(async move {
                        Api::<Workspace>::namespaced(admin, &ws.namespace().unwrap_or_default())
                            .create(&PostParams::default(), &ws)
                            .await
                    }));
                }
                for create in creates {
                    create.await??;
                }
            }
            anyhow::Ok(())
        })
    };

    // The chaos: a random replica killed every `kill_every` seconds, a new one started.
    let mut takeovers: Vec<Takeover> = Vec::new();
    let mut gone: Vec<ReplicaFigures> = Vec::new();
    let cleaned_up = {
        let api = Api::all(admin.clone());
        tokio::spawn(async move { every_cleaned_up(api, count).await.map(|()| t0.elapsed()) })
    };
    let mut jobs_at = None;
    let mut next_kill = Instant::now() + Duration::from_secs(kill_every);
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if cleaned_up.is_finished() {
            break;
        }
        if jobs_at.is_none() && count_jobs(&edge_clients).await? >= count {
            jobs_at = Some(t0.elapsed());
            eprintln!(
                "every attempt had its Job {:?} after the first create",
                t0.elapsed()
            );
            if kill_every == 0 {
                // A quiet fleet: every verdict once all Jobs exist, as installer_scale does.
                complete_new_jobs(&edge_clients, &completed_jobs).await?;
            }
        }
        if kill_every == 0 || Instant::now() < next_kill {
            continue;
        }
        next_kill = Instant::now() + Duration::from_secs(kill_every);
        let victim = {
            let mut replicas = replicas.lock().await;
            let i = bench::random_below(replicas.len());
            let mut victim = replicas.remove(i);
            gone.push(victim.figures(true).await);
            victim.process.kill();
            victim.process.identity.clone()
        };
        let since = Instant::now();
        let killed_at = t0.elapsed();
        let held: Vec<String> = holders(&admin, &edges)
            .await?
            .into_iter()
            .filter(|(_, h)| *h == victim)
            .map(|(e, _)| e)
            .collect();
        let replacement = Replica::start(&hub, &format!("fleet-{next_name}")).await?;
        next_name += 1;
        replicas.lock().await.push(replacement);
        let takeover = measure_takeover(&admin, &edges, &victim, &held, since).await?;
        eprintln!(
            "killed {victim} at {:.0} s: its {} edges held by others after {:.1} s, worked after {:.1} s",
            killed_at.as_secs_f64(),
            takeover.edges,
            takeover.leases_s,
            takeover.working_s
        );
        takeovers.push(takeover);
    }
    let done_at = cleaned_up.await??;
    creator.await??;
    let jobs_at = jobs_at.unwrap_or(done_at);
    eprintln!("every attempt cleaned up {done_at:?} after the first create");
    finished.store(true, Ordering::Relaxed);
    sampler.await?;
    if let Some(completer) = completer {
        completer.await?;
    }

    // What must hold across moves.
    let list = Api::<Workspace>::all(admin.clone())
        .list(&ListParams::default().labels(&format!("{CASE_LABEL}={CASE}")))
        .await?;
    let ready = list
        .items
        .iter()
        .filter(|w| {
            installer::has_condition(w, "Ready", "True", "Installed")
                && w.status.as_ref().is_some_and(|s| s.job_uid.is_some())
        })
        .count();
    if ready != count {
        // What the others say, by their Ready condition, with one status of each kind.
        let mut kinds: BTreeMap<String, (usize, String)> = BTreeMap::new();
        for w in &list.items {
            let ready = w.status.as_ref().and_then(|s| {
                s.conditions
                    .iter()
                    .find(|c| c.type_ == "Ready")
                    .map(|c| format!("{} {}", c.status, c.reason))
            });
            let key = format!(
                "Ready {} job recorded {}",
                ready.unwrap_or_else(|| "none".into()),
                w.status.as_ref().is_some_and(|s| s.job_uid.is_some())
            );
            let entry = kinds
                .entry(key)
                .or_insert_with(|| (0, serde_json::to_string(&w.status).unwrap_or_default()));
            entry.0 += 1;
        }
        for (kind, (n, sample)) in &kinds {
            eprintln!("{n} Workspaces: {kind}; one of them: {sample}");
        }
        anyhow::bail!("{ready} of {count} Ready with their Job recorded");
    }
    let jobs = count_jobs(&edge_clients).await?;
    ensure!(jobs == count, "{jobs} Jobs for {count} attempts");
    let left = runner_identities_left(&edge_clients).await?;
    ensure!(left == 0, "{left} runner identities left on the edges");

    let planes_cpu = bench::planes_cpu_seconds(&plane_dirs) - planes_cpu_before;
    let mut figures: Vec<ReplicaFigures> = gone;
    for replica in replicas.lock().await.iter_mut() {
        figures.push(replica.figures(false).await);
        replica.process.kill();
    }
    for f in &figures {
        eprintln!(
            "replica {}{}: cpu {:.1} s, peak RSS {:.1} MB, at most {} edges, {}",
            f.identity,
            if f.killed { " (killed)" } else { "" },
            f.cpu_s,
            f.peak_rss_mb,
            f.most_edges,
            f.watches
        );
    }
    let mut leases: Vec<f64> = takeovers.iter().map(|t| t.leases_s).collect();
    let mut worked: Vec<f64> = takeovers.iter().map(|t| t.working_s).collect();
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    println!(
        "installer_fleet workspaces={count} edges={edge_count} replicas={replica_count} kills={} jobs_s={:.1} done_s={:.1} takeover_median_s={:.1} takeover_max_s={:.1} working_median_s={:.1} working_max_s={:.1} rss_max_mb={:.1} rss_sum_mb={:.1} cpu_sum_s={:.1} planes_cpu_s={planes_cpu:.1}",
        takeovers.len(),
        jobs_at.as_secs_f64(),
        done_at.as_secs_f64(),
        median(&mut leases),
        max(&leases),
        median(&mut worked),
        max(&worked),
        figures.iter().map(|f| f.peak_rss_mb).fold(0.0, f64::max),
        figures
            .iter()
            .filter(|f| !f.killed)
            .map(|f| f.peak_rss_mb)
            .sum::<f64>(),
        figures.iter().map(|f| f.cpu_s).sum::<f64>(),
    );
    Ok(())
}
