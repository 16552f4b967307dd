//! Edges shared out over installer replicas (ADR 40), against the real
//! API servers: every replica works the edges rendezvous hashing gives it, each under the
//! edge's fencing Lease; a killed replica's edges are taken over and their attempts run; a
//! replica frozen (SIGSTOP) past its Lease writes nothing once it runs again until it has
//! taken an edge back.
//!
//! Five Edges point at the one edge API server (as edge-1 and edge-2 do in the demo); each
//! Workspace has a release namespace of its own there. The tests run one at a time.

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context, bail, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::{apimachinery::pkg::apis::meta::v1::MicroTime, jiff::Timestamp};
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use providers_shared::installer::edge_owners::{edge_lease, member_lease, owner_of};
use providers_tests::{
    User,
    installer::{
        self, CLUSTER, ControllerOptions, ControllerProcess, EDGE_WORKSPACE, Environment, Options,
        PlanSpec, SYSTEM, eventually, has_condition, status_of, wait_workspace,
    },
    platform, plugin,
};
use serde_json::json;
use tokio::sync::Mutex;

const WAIT: Duration = Duration::from_secs(90);

/// One test at a time: they kill and freeze replicas.
static SERIAL: Mutex<()> = Mutex::const_new(());

const EDGES: [&str; 4] = ["shard-a", "shard-b", "shard-c", "shard-d"];

async fn env() -> anyhow::Result<&'static Environment> {
    let env = installer::environment(
        Path::new(env!("CARGO_BIN_EXE_providers-controlplane")),
        Options::default(),
    )
    .await?;
    // The extra Edges, once per test binary.
    static REGISTERED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    REGISTERED
        .get_or_try_init(|| async {
            let admin = env.hub_admin().await?;
            for edge in EDGES {
                installer::register_edge(&env.hub, &env.edge, edge, CLUSTER, EDGE_WORKSPACE, None)
                    .await?;
                platform::grant_install(&admin, "alice", edge).await?;
            }
            anyhow::Ok(())
        })
        .await?;
    Ok(env)
}

async fn holder(hub: &Client, lease: &str) -> anyhow::Result<Option<String>> {
    Ok(Api::<Lease>::namespaced(hub.clone(), SYSTEM)
        .get_opt(lease)
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity))
}

/// A sharded replica of `case`, named `identity`, with `lease` as the base of its Leases.
async fn replica(
    env: &Environment,
    case: &str,
    identity: &str,
    lease: &str,
) -> anyhow::Result<ControllerProcess> {
    env.controller(ControllerOptions::new(case, identity, lease))
        .await
}

/// Every edge (edge-1 and the test's) held by the replica rendezvous hashing names among
/// `members`.
async fn held_as_hashed(hub: &Client, lease: &str, members: &[String]) -> anyhow::Result<()> {
    let every = std::iter::once(installer::EDGE).chain(EDGES);
    eventually("every edge held by its owner", WAIT, || async {
        for edge in every.clone() {
            let owner = owner_of(edge, members).context("an owner")?;
            if holder(hub, &edge_lease(lease, edge)).await?.as_deref() != Some(owner) {
                return Ok(None);
            }
        }
        Ok(Some(()))
    })
    .await
}

/// `kubectl provider edges` (the platform's view) names each edge's installer as `owner`
/// says.
async fn edges_view_names(env: &Environment, owner: impl Fn(&str) -> String) -> anyhow::Result<()> {
    let admin = env.hub.kubeconfig(User::PlatformAdmin);
    eventually(
        "kubectl provider edges to name the owners",
        WAIT,
        || async {
            let out = plugin::run(admin, &["edges"])?;
            let out = out.ok()?;
            let right = std::iter::once(installer::EDGE).chain(EDGES).all(|edge| {
                out.lines().any(|line| {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    words.first() == Some(&edge)
                        && words.get(4).copied() == Some(owner(edge).as_str())
                })
            });
            Ok(right.then_some(()))
        },
    )
    .await
}

fn hello_on(case: &str, name: &str, edge: &str) -> PlanSpec {
    PlanSpec {
        edge: edge.into(),
        ..PlanSpec::hello(case, "org-b", name, &format!("{case}-{name}"))
    }
}

/// Creates the Workspace `name` of `case` on `edge`, with a sealed attempt 1, and waits
/// until it is installed (`what` says by whom, for the failure message).
async fn install_on(
    env: &Environment,
    hub: &Client,
    case: &str,
    name: &str,
    edge: &str,
    what: &str,
) -> anyhow::Result<()> {
    let spec = hello_on(case, name, edge);
    env.create_workspace(hub, &spec, env.plan(&spec, 1, ""))
        .await?;
    wait_workspace(hub, "org-b", &spec.name, what, |ws| {
        has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    Ok(())
}

/// Keeps a membership Lease named `name`, held by `identity`, renewed every second.
async fn renew_member(leases: Api<Lease>, name: String, identity: String) {
    loop {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name},
            "spec": {
                "holderIdentity": identity,
                "leaseDurationSeconds": 6,
                "renewTime": MicroTime(Timestamp::now()),
            },
        });
        let _ = leases
            .patch(
                &name,
                &PatchParams::apply("ghost").force(),
                &Patch::Apply(&lease),
            )
            .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The value of an unlabelled gauge in a scrape (0 when absent).
fn metric(scrape: &str, name: &str) -> i64 {
    scrape
        .lines()
        .find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn signal(process: &ControllerProcess, signal: &str) -> anyhow::Result<()> {
    let pid = process.pid().context("the replica's pid")?;
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()?;
    if !status.success() {
        bail!("kill -{signal} {pid} failed");
    }
    Ok(())
}

/// Two replicas share the five edges as the hash says, each writing only its own; one is
/// killed: the other takes its edges within the Leases' time, and an attempt on one of
/// them runs.
#[tokio::test]
async fn edges_are_shared_over_replicas_and_a_dead_replicas_edges_are_taken_over()
-> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let case = "shared";
    let lease = format!("lease-{case}");
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let mut one = replica(env, case, "replica-1", &lease).await?;
    let two = replica(env, case, "replica-2", &lease).await?;
    let members = vec!["replica-1".to_owned(), "replica-2".to_owned()];
    held_as_hashed(&hub, &lease, &members).await?;
    let mine = |who: &str| -> Vec<&str> {
        EDGES
            .into_iter()
            .filter(|edge| owner_of(edge, &members) == Some(who))
            .collect()
    };
    ensure!(
        !mine("replica-1").is_empty() && !mine("replica-2").is_empty(),
        "both replicas own edges: {:?} / {:?}",
        mine("replica-1"),
        mine("replica-2")
    );

    edges_view_names(env, |edge| {
        owner_of(edge, &members).unwrap_or_default().to_owned()
    })
    .await?;

    // One Workspace per edge, each installed by its edge's owner.
    for edge in EDGES {
        let spec = hello_on(case, edge, edge);
        env.create_workspace(&hub, &spec, env.plan(&spec, 1, ""))
            .await?;
    }
    for edge in EDGES {
        wait_workspace(&hub, "org-b", edge, "installed", |ws| {
            has_condition(ws, "Ready", "True", "Installed")
        })
        .await?;
    }
    // Every Edge registered in this test binary (other tests add their own).
    let registered: Vec<String> = Api::<providers_shared::api::Edge>::all(hub.clone())
        .list(&Default::default())
        .await?
        .items
        .iter()
        .map(kube::ResourceExt::name_any)
        .collect();
    for (process, who) in [(&one, "replica-1"), (&two, "replica-2")] {
        let metrics = process.scrape().await?;
        let held = registered
            .iter()
            .filter(|edge| owner_of(edge, &members) == Some(who))
            .count();
        ensure!(
            metrics.contains(&format!("providers_installer_edges_held {held}")),
            "{who} holds {held} edges:\n{metrics}"
        );
        // A replica writes only its own edges' Workspaces.
        let log = process.log_text();
        let wrote_for = |edge: &str| {
            let key = format!("org-b/{edge}");
            log.lines()
                .any(|line| in_reconcile_of(line, &key) && line.contains("execute: done"))
        };
        for edge in EDGES {
            if mine(who).contains(&edge) {
                // What the check below looks for is in the log: the owner's own writes.
                ensure!(
                    wrote_for(edge),
                    "{who}'s log shows no write for {edge}, its own edge"
                );
            } else {
                ensure!(
                    !wrote_for(edge),
                    "{who} wrote for {edge}, another replica's edge"
                );
            }
        }
    }

    // replica-1 dies: replica-2 takes every edge.
    one.kill();
    let killed = Instant::now();
    held_as_hashed(&hub, &lease, &["replica-2".to_owned()]).await?;
    let takeover = killed.elapsed();
    eprintln!("replica-2 held every edge {takeover:?} after replica-1 was killed (Leases of 6 s)");
    // Membership seen silent for a lease duration (6 s), the edge Lease expired (6 s,
    // counted from when replica-2 first reads it), a retry period each: within 20 s.
    ensure!(
        takeover <= Duration::from_secs(20),
        "took over after {takeover:?}"
    );
    edges_view_names(env, |_| "replica-2".to_owned()).await?;
    let moved = mine("replica-1")[0];
    install_on(
        env,
        &hub,
        case,
        &format!("{moved}-after"),
        moved,
        "installed by replica-2",
    )
    .await?;
    // A member that works none of its edges (a Lease renewed by this test, as a replica
    // stuck before taking any edge would renew its own): its edges have no owner, and the
    // leader counts them; once it stops renewing, replica-2 takes them back.
    let ghost = (0..100)
        .map(|i| format!("ghost-{i}"))
        .find(|ghost| {
            let members = [ghost.clone(), "replica-2".to_owned()];
            EDGES
                .into_iter()
                .any(|edge| owner_of(edge, &members) == Some(ghost.as_str()))
        })
        .context("a ghost that owns an edge")?;
    let leases: Api<Lease> = Api::namespaced(hub.clone(), SYSTEM);
    let renewing = tokio::spawn(renew_member(
        leases.clone(),
        format!("{lease}-member-{ghost}"),
        ghost.clone(),
    ));
    eventually(
        "the ghost's edges counted without an owner",
        WAIT,
        || async {
            Ok((metric(
                &two.scrape().await?,
                "providers_installer_edges_without_owner",
            ) >= 1)
                .then_some(()))
        },
    )
    .await?;
    renewing.abort();
    let stopped = Instant::now();
    held_as_hashed(&hub, &lease, &["replica-2".to_owned()]).await?;
    eprintln!(
        "replica-2 held the ghost's edges {:?} after it stopped renewing",
        stopped.elapsed()
    );
    eventually("replica-2 leads, every edge owned", WAIT, || async {
        let scrape = two.scrape().await?;
        Ok((metric(&scrape, "providers_installer_leader") == 1
            && metric(&scrape, "providers_installer_edges_without_owner") == 0
            && metric(&scrape, "providers_installer_members") == 1)
            .then_some(()))
    })
    .await?;
    Ok(())
}

/// Never two writers of an edge: the owner of an edge stops (SIGSTOP, as a paused VM would)
/// in the middle of an attempt, right after creating its namespace on the edge; the other
/// replica takes the edge once the Leases lapse and installs; thawed, the stopped replica sends nothing for that Workspace,
/// not even the next action of the reconcile it was in, until it has taken the edge's Lease
/// back.
#[tokio::test]
async fn a_replica_frozen_past_its_lease_sends_nothing_once_another_took_its_edge()
-> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let case = "frozen";
    let lease = format!("lease-{case}");
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let members = vec!["replica-1".to_owned(), "replica-2".to_owned()];
    let _two = replica(env, case, "replica-2", &lease).await?;
    let mut options = ControllerOptions::new(case, "replica-1", &lease);
    options.freeze_after = Some("create-namespace".into());
    let one = env.controller(options).await?;
    held_as_hashed(&hub, &lease, &members).await?;
    let edge = EDGES
        .into_iter()
        .find(|edge| owner_of(edge, &members) == Some("replica-1"))
        .context("an edge of replica-1's")?;
    let spec = hello_on(case, "frozen-demo", edge);
    env.create_workspace(&hub, &spec, env.plan(&spec, 1, ""))
        .await?;
    eventually(
        "replica-1 to stop after creating the namespace",
        WAIT,
        || async {
            Ok(one
                .log_text()
                .contains("stopping this process right after create-namespace")
                .then_some(()))
        },
    )
    .await?;
    let frozen = Instant::now();
    eventually(
        "replica-2 to hold the stopped replica's edge",
        WAIT,
        || async {
            Ok(
                (holder(&hub, &edge_lease(&lease, edge)).await?.as_deref() == Some("replica-2"))
                    .then_some(()),
            )
        },
    )
    .await?;
    eprintln!(
        "replica-2 held {edge} {:?} after replica-1 stopped",
        frozen.elapsed()
    );
    wait_workspace(
        &hub,
        "org-b",
        "frozen-demo",
        "installed by replica-2",
        |ws| has_condition(ws, "Ready", "True", "Installed"),
    )
    .await?;
    let before = one.log_text().len();
    signal(&one, "CONT")?;
    // Thawed, its reconcile goes on to the next action, and its watches bring what it
    // missed; its renew deadline has long passed. By the hash the edge is its own again
    // once its membership is seen: it may send only after taking the edge's Lease back.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let after = one.log_text();
    let after = &after[before.min(after.len())..];
    ensure!(
        after.contains("running again"),
        "replica-1 resumed:\n{after}"
    );
    // Each of its log lines names the Workspace in the reconcile's span.
    let sent = line_offset(after, |line| {
        in_reconcile_of(line, "org-b/frozen-demo") && line.contains("execute: sending")
    });
    let retook = after.find(&format!("holding the edge's Lease: working it edge={edge}"));
    match (sent, retook) {
        (None, _) => {}
        (Some(sent), Some(retook)) if retook < sent => {}
        _ => bail!("replica-1 sent a write before taking {edge} back:\n{after}"),
    }
    let ws = installer::workspace(&hub, "org-b", "frozen-demo").await?;
    ensure!(
        status_of(&ws).attempts.len() == 1 && has_condition(&ws, "Ready", "True", "Installed"),
        "one attempt, installed: {:?}",
        ws.status
    );
    Ok(())
}

/// Whether an installer log line was written in a reconcile of the Workspace `key`
/// (`namespace/name`): the reconcile's span names it.
fn in_reconcile_of(line: &str, key: &str) -> bool {
    line.contains(&format!("{{workspace={key} ")) || line.contains(&format!("{{workspace={key}}}"))
}

/// Where in `text` the first line that `matches` starts.
fn line_offset(text: &str, matches: impl Fn(&str) -> bool) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if matches(line) {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

/// An upgrade that skips scaling an installer of the removed leader-standby mode to 0
/// (ADR 44): while that installer leads (the leader Lease renewed by a holder with no
/// membership Lease), a replica of this version takes no edge and is not ready, naming
/// the old leader and what to do; once the old leader is gone, it takes every edge.
#[tokio::test]
async fn a_replica_works_no_edge_while_an_installer_of_the_leader_standby_mode_leads()
-> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let case = "old-mode";
    let lease = format!("lease-{case}");
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let leases: Api<Lease> = Api::namespaced(hub.clone(), SYSTEM);
    let old = tokio::spawn(renew_member(
        leases.clone(),
        lease.clone(),
        "old-leader".into(),
    ));
    eventually("the old installer to lead", WAIT, || async {
        Ok((holder(&hub, &lease).await?.as_deref() == Some("old-leader")).then_some(()))
    })
    .await?;
    let replica = replica(env, case, "replica-1", &lease).await?;
    eventually("the replica to be a member", WAIT, || async {
        Ok((holder(&hub, &member_lease(&lease, "replica-1"))
            .await?
            .as_deref()
            == Some("replica-1"))
        .then_some(()))
    })
    .await?;
    eventually("the replica to say it works no edge", WAIT, || async {
        let ready = replica.readyz().await?;
        Ok((!ready.starts_with("HTTP/1.0 200")
            && ready.contains("old-leader")
            && ready.contains("leader-standby mode")
            && ready.contains("scale it to 0"))
        .then_some(()))
    })
    .await?;
    // The old leader was live before the replica's first round with its Leases listed,
    // and a round decides what it says in /readyz before it takes any edge: no round of
    // the replica has taken one, nor will while the old leader renews.
    for edge in std::iter::once(installer::EDGE).chain(EDGES) {
        ensure!(
            holder(&hub, &edge_lease(&lease, edge)).await?.as_deref() != Some("replica-1"),
            "the replica took {edge} while the old installer leads:\n{}",
            replica.log_tail()
        );
    }
    ensure!(
        !replica
            .log_text()
            .contains("the edge is this replica's: taking its Lease"),
        "the replica went for an edge's Lease while the old installer leads:\n{}",
        replica.log_tail()
    );
    // The old installer scaled to 0: it gives its Lease back.
    old.abort();
    leases.delete(&lease, &Default::default()).await?;
    held_as_hashed(&hub, &lease, &["replica-1".to_owned()]).await?;
    eventually("the replica to be ready", WAIT, || async {
        Ok(replica
            .readyz()
            .await?
            .starts_with("HTTP/1.0 200")
            .then_some(()))
    })
    .await?;
    Ok(())
}

/// A sharing replica that leads the hub-wide duties stops gracefully (SIGTERM, as a
/// rollout or a drain stops it): it gives back its edges and the leader Lease, and the
/// other takes them at once.
#[tokio::test]
async fn a_sharing_leader_stopped_gracefully_hands_over_at_once() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let case = "graceful";
    let lease = format!("lease-{case}");
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let mut one = replica(env, case, "replica-1", &lease).await?;
    let mut two = replica(env, case, "replica-2", &lease).await?;
    held_as_hashed(
        &hub,
        &lease,
        &["replica-1".to_owned(), "replica-2".to_owned()],
    )
    .await?;
    let leader = eventually("a hub leader", WAIT, || async {
        holder(&hub, &lease).await
    })
    .await?;
    let (stopped, name) = if leader == "replica-1" {
        (&mut one, "replica-2")
    } else {
        (&mut two, "replica-1")
    };
    signal(stopped, "TERM")?;
    stopped.exited(WAIT).await?;
    let gone = Instant::now();
    held_as_hashed(&hub, &lease, &[name.to_owned()]).await?;
    eventually("the survivor to lead", WAIT, || async {
        Ok((holder(&hub, &lease).await?.as_deref() == Some(name)).then_some(()))
    })
    .await?;
    let took = gone.elapsed();
    // Given back, not lapsed: well within the Leases' 6 s.
    ensure!(
        took < Duration::from_secs(5),
        "the survivor held every edge and led {took:?} after the stop"
    );
    Ok(())
}

/// A Workspace of an Edge that does not exist is the hub leader's to answer (no edge Lease
/// can be held for it); once the Edge is registered, its owner by the hash takes its Lease
/// and installs, and the leader no longer writes for it.
#[tokio::test]
async fn a_workspace_of_a_missing_edge_is_answered_by_the_leader_then_installed_by_the_owner()
-> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let case = "missing";
    let lease = format!("lease-{case}");
    let edge = "shard-late";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let _one = replica(env, case, "replica-1", &lease).await?;
    let _two = replica(env, case, "replica-2", &lease).await?;
    held_as_hashed(
        &hub,
        &lease,
        &["replica-1".to_owned(), "replica-2".to_owned()],
    )
    .await?;
    let spec = hello_on(case, "late", edge);
    env.create_workspace(&hub, &spec, env.plan(&spec, 1, ""))
        .await?;
    wait_workspace(
        &hub,
        "org-b",
        &spec.name,
        "told the edge is missing",
        |ws| {
            installer::condition(ws, "Ready").is_some_and(|c| {
                c.message
                    .contains(&format!("no Edge named {edge:?} is registered"))
            })
        },
    )
    .await?;
    installer::register_edge(&env.hub, &env.edge, edge, CLUSTER, EDGE_WORKSPACE, None).await?;
    platform::grant_install(&hub, "alice", edge).await?;
    let members = ["replica-1".to_owned(), "replica-2".to_owned()];
    let owner = owner_of(edge, &members).context("an owner")?.to_owned();
    eventually("the owner to hold the new edge", WAIT, || async {
        Ok(
            (holder(&hub, &edge_lease(&lease, edge)).await?.as_deref() == Some(owner.as_str()))
                .then_some(()),
        )
    })
    .await?;
    wait_workspace(
        &hub,
        "org-b",
        &spec.name,
        "installed on the new edge",
        |ws| has_condition(ws, "Ready", "True", "Installed"),
    )
    .await?;
    Ok(())
}

/// Two Edges whose fencing Lease names are one (a long name is cut and hashed; another
/// Edge spelled like the result): neither is worked, and the leader counts both without an
/// owner, so the alert fires instead of one edge waiting silently.
#[tokio::test]
async fn edges_sharing_one_lease_name_are_worked_by_none_and_counted() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let case = "collide";
    let lease = format!("lease-{case}");
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let long = format!("collide-{}", "a".repeat(240));
    let cut = edge_lease(&lease, &long);
    let twin = cut
        .strip_prefix(&format!("{lease}-edge-"))
        .context("the cut Lease name keeps its prefix")?
        .to_owned();
    ensure!(
        edge_lease(&lease, &twin) == cut,
        "the twin shares the Lease name"
    );
    // Registered with edge shard-a's kubeconfig Secret (a Secret named after so long an
    // Edge would be too long a name).
    for edge in [&long, &twin] {
        let object = providers_shared::api::Edge::new(
            edge,
            providers_shared::api::EdgeSpec {
                cluster_id: CLUSTER.into(),
                workspace_uuid: EDGE_WORKSPACE.into(),
                kubeconfig_secret_ref: providers_shared::api::SecretKeyRef {
                    namespace: installer::EDGE_CREDENTIALS.into(),
                    name: format!("{}-kubeconfig", EDGES[0]),
                    key: "kubeconfig".into(),
                },
            },
        );
        Api::<providers_shared::api::Edge>::all(hub.clone())
            .create(&Default::default(), &object)
            .await?;
    }
    let one = replica(env, case, "replica-1", &lease).await?;
    held_as_hashed(&hub, &lease, &["replica-1".to_owned()]).await?;
    eventually("both counted without an owner", WAIT, || async {
        Ok((metric(
            &one.scrape().await?,
            "providers_installer_edges_without_owner",
        ) >= 2)
            .then_some(()))
    })
    .await?;
    ensure!(
        holder(&hub, &cut).await?.is_none_or(|h| h.is_empty()),
        "an edge of the two was taken"
    );
    ensure!(
        one.log_text().contains("give one fencing Lease name"),
        "the replica did not say why:\n{}",
        one.log_tail()
    );
    // Not left behind for the other tests of this binary.
    for edge in [&long, &twin] {
        Api::<providers_shared::api::Edge>::all(hub.clone())
            .delete(edge, &Default::default())
            .await?;
    }
    Ok(())
}
