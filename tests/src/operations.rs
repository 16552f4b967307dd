//! Day-to-day operations under load (docs/operations.md "Operations under load"): a hub
//! and an edge, webhook replicas behind one Service address, installer replicas, and Jobs
//! ended by a job controller stand-in, so a steady stream of tenant writes runs while an
//! operator rolls the webhook, rotates its certificate, restarts an API server or rolls the
//! installer. The tests (tests/tests/operations_under_load.rs) count failed writes and
//! lost attempts; the benchmark (tests/benches/operations_load.rs) reports the figures.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams},
};
use providers_shared::api::Workspace;

use crate::{
    Supervised, User,
    balancer::Balancer,
    bench, installer,
    installer::{ControllerOptions, ControllerProcess},
    job_completer::JobCompleter,
    pki::Authority,
    platform,
    secret_volume::SecretVolume,
    webhook::{Webhook, WebhookReplica, register_configurations},
    write_load::{LoadSettings, WriteLoad, settled},
};

/// The tenants' organization and the Recipe the load installs.
pub const ORG: &str = "org-a";
pub const RECIPE: &str = "ops-hello";
/// A chart repository nothing fetches from: Jobs are ended without running helm.
const REPOSITORY: &str = "http://127.0.0.1:1/charts";
const LEASE: &str = "lease-ops";
/// How long a replica may take to become ready or to stop.
const PROCESS_WAIT: Duration = Duration::from_secs(60);

/// The whole system on a hub and an edge, for one test or benchmark run.
pub struct Bed {
    pub hub: Supervised,
    pub edge: Supervised,
    /// The webhook's files (certificate, sealing key, identity) its replicas share.
    pub webhook: Webhook,
    /// The webhook Service's address, where the webhook configurations point.
    pub service: Balancer,
    pub replicas: Vec<WebhookReplica>,
    /// The serving certificate's Secret, mounted as the kubelet mounts it.
    pub tls: SecretVolume,
    /// The sealing key's Secret and the published keys' ConfigMap, mounted the same way.
    pub sealing_key: SecretVolume,
    pub public_keys: SecretVolume,
    /// The published keys: (`<keyID>.pem`, PEM).
    published: Vec<(String, String)>,
    pub installers: Vec<ControllerProcess>,
    pub completer: JobCompleter,
    started_installers: usize,
}

impl Bed {
    /// Starts the control planes, the platform, `webhooks` webhook replicas and
    /// `installers` installer replicas (sharing the edges); a Job in `fail_every` fails.
    pub async fn start(
        controlplane_bin: &Path,
        webhooks: usize,
        installers: usize,
        fail_every: u64,
    ) -> anyhow::Result<Self> {
        let mut planes =
            bench::start_planes(controlplane_bin, ["hub".into(), installer::EDGE.into()]).await?;
        let edge = planes.pop().context("the edge")?;
        let hub = planes.pop().context("the hub")?;
        {
            let info = hub.info.clone();
            tokio::task::spawn_blocking(move || platform::install(&info)).await??;
        }
        let admin = hub.info.client(User::Admin).await?;
        installer::register_edge(
            &hub.info,
            &edge.info,
            installer::EDGE,
            installer::CLUSTER,
            installer::EDGE_WORKSPACE,
            None,
        )
        .await?;
        platform::grant_install(&admin, "alice", installer::EDGE).await?;
        publish_recipe(&admin).await?;
        let webhook = {
            let info = hub.info.clone();
            tokio::task::spawn_blocking(move || Webhook::prepare(&info, &[REPOSITORY])).await??
        };
        let tls = {
            let dir = webhook.dir.path();
            let (cert, key) = (
                std::fs::read_to_string(dir.join("tls.crt"))?,
                std::fs::read_to_string(dir.join("tls.key"))?,
            );
            SecretVolume::mount(
                &dir.join("tls-volume"),
                &[("tls.crt", &cert), ("tls.key", &key)],
            )?
        };
        let (sealing_key, public_keys, published) = {
            let dir = webhook.dir.path();
            let private = std::fs::read_to_string(dir.join("sealing.pem"))?;
            let published = vec![(
                format!("{}.pem", webhook.key_id),
                webhook.public_key_pem.clone(),
            )];
            let entries: Vec<(&str, &str)> = published
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            (
                SecretVolume::mount(&dir.join("sealing-volume"), &[("sealing.pem", &private)])?,
                SecretVolume::mount(&dir.join("public-keys-volume"), &entries)?,
                published,
            )
        };
        let service = Balancer::start().await?;
        let completer = JobCompleter::start(edge.info.client(User::Admin).await?, fail_every);
        let mut bed = Self {
            hub,
            edge,
            webhook,
            service,
            replicas: Vec::new(),
            tls,
            sealing_key,
            public_keys,
            published,
            installers: Vec::new(),
            completer,
            started_installers: 0,
        };
        for _ in 0..webhooks {
            bed.add_webhook_replica(&[]).await?;
        }
        register_configurations(&bed.hub.info, bed.service.addr.port(), &bed.webhook.ca_pem)?;
        bed.webhook.wait_until_called(&bed.hub.info).await?;
        for _ in 0..installers {
            bed.add_installer().await?;
        }
        Ok(bed)
    }

    /// Starts a webhook replica (`overrides` replace flags), waits until it is ready and
    /// adds it to the Service's endpoints.
    pub async fn add_webhook_replica(
        &mut self,
        overrides: &[(&str, String)],
    ) -> anyhow::Result<()> {
        let mut flags = vec![
            ("--tls-cert", self.tls.path("tls.crt").display().to_string()),
            ("--tls-key", self.tls.path("tls.key").display().to_string()),
            (
                "--sealing-key",
                self.sealing_key.path("sealing.pem").display().to_string(),
            ),
            (
                "--public-keys-dir",
                self.public_keys.path("").display().to_string(),
            ),
        ];
        flags.extend(overrides.iter().cloned());
        let mut replica = self.webhook.replica(&flags)?;
        replica.ready(PROCESS_WAIT).await?;
        self.service.add(replica.addr);
        self.replicas.push(replica);
        Ok(())
    }

    /// Replaces every webhook replica, one at a time, as a Deployment's rolling update
    /// with `maxSurge: 1, maxUnavailable: 0` does: the new Pod ready and in the endpoints,
    /// then the old one sent SIGTERM, and taken out of the endpoints `endpoints_lag` later
    /// (the kubelet and the EndpointSlice controller act apart), then gone before the
    /// next. `overrides` apply to the new replicas.
    pub async fn roll_webhook(
        &mut self,
        overrides: &[(&str, String)],
        endpoints_lag: Duration,
    ) -> anyhow::Result<()> {
        let old = std::mem::take(&mut self.replicas);
        for mut replica in old {
            self.add_webhook_replica(overrides).await?;
            replica.terminate()?;
            // Its readiness probe fails from SIGTERM on, which is what takes it out of
            // the endpoints; meanwhile it must still serve.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let readyz = replica.readyz().await?;
            if !readyz.contains("stopping") {
                bail!("a webhook replica sent SIGTERM still says it is ready:\n{readyz}");
            }
            tokio::time::sleep(endpoints_lag).await;
            self.service.remove(replica.addr);
            let status = replica.exited(PROCESS_WAIT).await?;
            if !status.success() {
                bail!(
                    "the webhook replica ended with {status} on SIGTERM:\n{}",
                    crate::controlplane::tail(&replica.log)
                );
            }
        }
        Ok(())
    }

    /// Sets the webhook configurations' caBundle to `pem` (one CA, or several during a
    /// change of CA) as cert-manager's CA injector does, and gives the API server's
    /// webhook configuration informer a moment to load it.
    pub async fn set_ca_bundle(&self, pem: &str) -> anyhow::Result<()> {
        register_configurations(&self.hub.info, self.service.addr.port(), pem)?;
        tokio::time::sleep(Duration::from_secs(3)).await;
        Ok(())
    }

    /// Issues a new serving certificate from `ca` (`None`: the CA that issued the first,
    /// a renewal), updates the mounted Secret as the kubelet does, and waits until every
    /// replica serves it to new connections.
    pub async fn renew_serving_certificate(
        &mut self,
        ca: Option<&Authority>,
    ) -> anyhow::Result<()> {
        const RELOADED: &str = "serving certificate reloaded";
        let reloads = |replica: &WebhookReplica| {
            std::fs::read_to_string(&replica.log)
                .unwrap_or_default()
                .matches(RELOADED)
                .count()
        };
        let before: Vec<usize> = self.replicas.iter().map(reloads).collect();
        let serving = ca.unwrap_or(&self.webhook.ca).issue_serving(
            "providers-webhook",
            &["providers-webhook.providers-system.svc"],
        )?;
        self.tls.update(&[
            ("tls.crt", &serving.cert_pem),
            ("tls.key", &serving.key_pem),
        ])?;
        let deadline = Instant::now() + PROCESS_WAIT;
        while self
            .replicas
            .iter()
            .zip(&before)
            .any(|(replica, before)| reloads(replica) <= *before)
        {
            if Instant::now() > deadline {
                bail!(
                    "a webhook replica did not load the new serving certificate within {PROCESS_WAIT:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// Step 1 of "Rotating the sealing key": a new key pair, its public key published
    /// beside the old one in the ConfigMap (and so in the webhook's mounted folder).
    /// Returns the new key's ID and its private key (PEM).
    pub async fn publish_new_sealing_key(&mut self) -> anyhow::Result<(String, String)> {
        let sealer = providers_shared::seal::Sealer::generate()?;
        let entry = (format!("{}.pem", sealer.key_id()), sealer.public_key_pem());
        let patch = serde_json::json!({"data": {entry.0.clone(): entry.1.clone()}});
        Api::<ConfigMap>::namespaced(self.hub_admin().await?, crate::webhook::SYSTEM_NAMESPACE)
            .patch(
                crate::webhook::KEYS_CONFIGMAP,
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await?;
        self.published.push(entry);
        let entries: Vec<(&str, &str)> = self
            .published
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.public_keys.update(&entries)?;
        Ok((sealer.key_id().to_owned(), sealer.to_pkcs8_pem()?))
    }

    /// Step 2: the sealing key's Secret holds `private_pem` (the replicas started from now
    /// on seal with it).
    pub fn switch_sealing_key(&mut self, private_pem: &str) -> anyhow::Result<()> {
        self.sealing_key.update(&[("sealing.pem", private_pem)])
    }

    /// The key IDs that sealed the org's current plans, with how many each.
    pub async fn plans_by_key(&self) -> anyhow::Result<std::collections::BTreeMap<String, usize>> {
        let api: Api<Workspace> = Api::namespaced(self.hub_admin().await?, ORG);
        let mut keys = std::collections::BTreeMap::new();
        for ws in api.list(&ListParams::default()).await?.items {
            if let Some(plan) = ws.spec.plan {
                *keys.entry(plan.seal.key_id).or_insert(0) += 1;
            }
        }
        Ok(keys)
    }

    /// Starts one more installer replica.
    pub async fn add_installer(&mut self) -> anyhow::Result<()> {
        self.started_installers += 1;
        let identity = format!("installer-{}", self.started_installers);
        let process = ControllerProcess::start(
            &self.hub.info,
            ControllerOptions {
                args: ["--concurrency", "16"].map(String::from).to_vec(),
                ..ControllerOptions::new("", &identity, LEASE)
            },
        )
        .await?;
        self.installers.push(process);
        Ok(())
    }

    /// Replaces every installer replica, one at a time, as a rolling update with
    /// `maxSurge: 1` does: the new one started and Ready (its `/readyz`), then the old one
    /// sent SIGTERM and gone before the next.
    pub async fn roll_installers(&mut self) -> anyhow::Result<()> {
        let old = std::mem::take(&mut self.installers);
        for mut process in old {
            self.add_installer().await?;
            let new = self.installers.last().context("the new replica")?;
            let deadline = Instant::now() + PROCESS_WAIT;
            while !new
                .readyz()
                .await
                .is_ok_and(|a| a.lines().next().is_some_and(|l| l.contains(" 200 ")))
            {
                if Instant::now() > deadline {
                    bail!(
                        "{} was not ready within {PROCESS_WAIT:?}:\n{}",
                        new.identity,
                        new.log_tail()
                    );
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            crate::process::signal(process.pid().context("the installer's pid")?, "TERM")?;
            let status = process.exited(PROCESS_WAIT).await?;
            if !status.success() {
                bail!(
                    "{} ended with {status} on SIGTERM:\n{}",
                    process.identity,
                    process.log_tail()
                );
            }
        }
        Ok(())
    }

    /// A tenant's write load on the org's Workspaces `<prefix>-<i>`.
    pub async fn load(&self, prefix: &str, rate: f64, pool: usize) -> anyhow::Result<WriteLoad> {
        let alice = self.hub.info.client(User::Alice).await?;
        Ok(WriteLoad::start(
            alice,
            LoadSettings {
                rate,
                pool,
                prefix: prefix.into(),
                namespace: ORG.into(),
                recipe: RECIPE.into(),
                edge: installer::EDGE.into(),
            },
        ))
    }

    /// Waits until every Workspace of the org has the result of its current attempt
    /// recorded, and every one being deleted is gone; how long that took, or the ones
    /// still waiting after `timeout` (lost attempts).
    pub async fn settle(&self, timeout: Duration) -> anyhow::Result<Settled> {
        let hub = self.hub.info.client(User::Admin).await?;
        let api: Api<Workspace> = Api::namespaced(hub, ORG);
        let begun = Instant::now();
        loop {
            let waiting: Vec<String> = match api.list(&ListParams::default()).await {
                Ok(list) => list
                    .items
                    .iter()
                    .filter(|ws| ws.metadata.deletion_timestamp.is_some() || settled(ws).is_none())
                    .map(|ws| format!("{} ({})", ws.name_any(), waiting_for(ws)))
                    .collect(),
                // The API server may be restarting: look again.
                Err(_) => vec!["(the hub did not answer)".into()],
            };
            if waiting.is_empty() || begun.elapsed() > timeout {
                return Ok(Settled {
                    took: begun.elapsed(),
                    waiting,
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The org's attempts that have no result yet, by Workspace name and attempt ID.
    pub async fn attempts_in_flight(&self) -> anyhow::Result<Vec<(String, String)>> {
        let api: Api<Workspace> = Api::namespaced(self.hub_admin().await?, ORG);
        Ok(api
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|ws| settled(ws).is_none())
            .filter_map(|ws| {
                let plan = ws.spec.plan.as_ref()?;
                Some((ws.name_any(), plan.plan.attempt_id.clone()))
            })
            .collect())
    }

    /// Waits until each of `attempts` has its result (or its Workspace is gone); how long
    /// that took, or the attempts still waiting after `timeout`.
    pub async fn results_of(
        &self,
        attempts: &[(String, String)],
        timeout: Duration,
    ) -> anyhow::Result<Settled> {
        let api: Api<Workspace> = Api::namespaced(self.hub_admin().await?, ORG);
        let begun = Instant::now();
        loop {
            let mut waiting = Vec::new();
            for (name, attempt_id) in attempts {
                let done = match api.get_opt(name).await {
                    Ok(None) => true,
                    // A later attempt is sealed only once this one has its result.
                    Ok(Some(ws)) => {
                        ws.spec
                            .plan
                            .as_ref()
                            .is_some_and(|p| p.plan.attempt_id != *attempt_id)
                            || ws.status.as_ref().is_some_and(|s| {
                                s.attempt_id.as_deref() == Some(attempt_id.as_str())
                                    && s.job_result.is_some()
                            })
                    }
                    Err(_) => false,
                };
                if !done {
                    waiting.push(format!("{name} ({attempt_id})"));
                }
            }
            if waiting.is_empty() || begun.elapsed() > timeout {
                return Ok(Settled {
                    took: begun.elapsed(),
                    waiting,
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Restarts the hub's kube-apiserver (every watch and connection drops).
    pub async fn restart_hub_apiserver(&self) -> anyhow::Result<()> {
        restart(&self.hub).await
    }

    /// Restarts the edge's kube-apiserver.
    pub async fn restart_edge_apiserver(&self) -> anyhow::Result<()> {
        restart(&self.edge).await
    }

    /// A client of the hub as its admin.
    pub async fn hub_admin(&self) -> anyhow::Result<Client> {
        self.hub.info.client(User::Admin).await
    }

    /// The installer replicas' log lines that hold `needle`, for failure messages.
    pub fn installer_lines(&self, needle: &str) -> String {
        self.installers
            .iter()
            .flat_map(|p| {
                p.log_text()
                    .lines()
                    .filter(|l| l.contains(needle))
                    .map(|l| format!("{}: {l}", p.identity))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Which installer replica logs, for failure messages.
    pub fn installer_logs(&self) -> String {
        self.installers
            .iter()
            .map(|p| format!("--- {}\n{}", p.identity, p.log_tail()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// With `PROVIDERS_OPS_KEEP_LOGS` set to a folder, the installers' and webhook replicas'
/// logs are copied there when the bed goes, to read a run that went wrong.
impl Drop for Bed {
    fn drop(&mut self) {
        let Some(dir) = std::env::var_os("PROVIDERS_OPS_KEEP_LOGS") else {
            return;
        };
        // A folder per bed: every bed's processes have the same names.
        let bed = self
            .hub
            .info
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = std::path::PathBuf::from(dir).join(bed);
        let _ = std::fs::create_dir_all(&dir);
        for process in &self.installers {
            let _ = std::fs::copy(&process.log, dir.join(format!("{}.log", process.identity)));
        }
        for replica in &self.replicas {
            if let Some(name) = replica.log.file_name() {
                let _ = std::fs::copy(&replica.log, dir.join(name));
            }
        }
    }
}

async fn restart(plane: &Supervised) -> anyhow::Result<()> {
    // The supervisor answers on a blocking pipe.
    tokio::task::block_in_place(|| plane.restart_apiserver())
        .with_context(|| format!("restarting {}'s kube-apiserver", plane.info.name))
}

/// What a Workspace waits for, from its Ready condition.
fn waiting_for(ws: &Workspace) -> String {
    let conditions = ws
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| format!("{}: {}", c.reason, c.message))
        .unwrap_or_else(|| "no status yet".into())
}

/// The end of a load: how long until every attempt had its result, and those that had
/// none by the deadline.
#[derive(Debug)]
pub struct Settled {
    pub took: Duration,
    pub waiting: Vec<String>,
}

/// The Recipe the load installs: the demo chart's shape, one string value, a release
/// namespace per Workspace (the load creates and deletes many).
async fn publish_recipe(admin: &Client) -> anyhow::Result<()> {
    let mut recipe = crate::system::greeting_recipe(RECIPE, REPOSITORY, "hello", &["0.1.0"]);
    recipe.spec.namespace = Some("{org}-{workspace}".into());
    crate::system::apply_recipe(admin, &recipe).await
}

/// The routine operations measured under load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Both webhook replicas replaced one at a time.
    WebhookRoll,
    /// The serving certificate renewed, then replaced by one of a new CA.
    CertificateRotation,
    /// The sealing key rotated as docs/operations.md says.
    SealingKeyRotation,
    /// The hub's kube-apiserver restarted.
    HubRestart,
    /// The edge's kube-apiserver restarted.
    EdgeRestart,
    /// Both installer replicas replaced one at a time.
    InstallerRoll,
}

impl Event {
    pub const ALL: [Event; 6] = [
        Event::WebhookRoll,
        Event::CertificateRotation,
        Event::SealingKeyRotation,
        Event::HubRestart,
        Event::EdgeRestart,
        Event::InstallerRoll,
    ];

    /// Its name in settings and reports.
    pub fn name(self) -> &'static str {
        match self {
            Event::WebhookRoll => "webhook-roll",
            Event::CertificateRotation => "certificate",
            Event::SealingKeyRotation => "sealing-key",
            Event::HubRestart => "hub-restart",
            Event::EdgeRestart => "edge-restart",
            Event::InstallerRoll => "installer-roll",
        }
    }
}

/// The load's settings for one event.
#[derive(Clone, Copy, Debug)]
pub struct LoadShape {
    /// Writes per second.
    pub rate: f64,
    /// Workspace names the writes work on.
    pub pool: usize,
    /// Load before and after the event.
    pub quiet: Duration,
    /// How long every attempt may take to get its result once the load stops.
    pub settle: Duration,
}

/// What one event under load came to.
#[derive(Debug)]
pub struct EventRun {
    pub event: Event,
    pub report: crate::write_load::LoadReport,
    /// When the event began and ended, from the start of the load.
    pub during: (Duration, Duration),
    /// When the hub's API server was away (only for its restart).
    pub hub_away: Option<(Duration, Duration)>,
    /// Attempts without a result when the event began, and when each had it after the
    /// event.
    pub in_flight: usize,
    pub recovered: Settled,
    /// Every attempt's result after the load stopped.
    pub settled: Settled,
    /// Attempts run twice (a second Job for one attempt ID).
    pub run_twice: Vec<String>,
    /// The sealing keys before and after, for [`Event::SealingKeyRotation`].
    pub keys: Option<(String, String)>,
}

/// Runs `event` on `bed` under a load of workspaces `<event name>-<i>`.
pub async fn run(bed: &mut Bed, event: Event, shape: LoadShape) -> anyhow::Result<EventRun> {
    let load = bed.load(event.name(), shape.rate, shape.pool).await?;
    tokio::time::sleep(shape.quiet).await;
    let in_flight = bed.attempts_in_flight().await?;
    let from = load.now();
    let mut keys = None;
    // Kubernetes removes a stopping Pod from the endpoints a moment after its SIGTERM.
    let lag = Duration::from_secs(1);
    match event {
        Event::WebhookRoll => bed.roll_webhook(&[], lag).await?,
        Event::CertificateRotation => {
            bed.renew_serving_certificate(None).await?;
            let new_ca = Authority::generate("webhook-ca-2")?;
            let both = format!("{}{}", bed.webhook.ca_pem, new_ca.cert_pem);
            bed.set_ca_bundle(&both).await?;
            bed.renew_serving_certificate(Some(&new_ca)).await?;
            bed.set_ca_bundle(&new_ca.cert_pem).await?;
        }
        Event::SealingKeyRotation => {
            let old = bed.webhook.key_id.clone();
            let (new, private) = bed.publish_new_sealing_key().await?;
            bed.roll_webhook(&[], lag).await?;
            bed.switch_sealing_key(&private)?;
            bed.roll_webhook(&[], lag).await?;
            keys = Some((old, new));
        }
        Event::HubRestart => bed.restart_hub_apiserver().await?,
        Event::EdgeRestart => bed.restart_edge_apiserver().await?,
        Event::InstallerRoll => bed.roll_installers().await?,
    }
    let to = load.now();
    let recovered = bed.results_of(&in_flight, shape.settle).await?;
    tokio::time::sleep(shape.quiet).await;
    let report = load.stop().await;
    let settled = bed.settle(shape.settle).await?;
    Ok(EventRun {
        event,
        report,
        during: (from, to),
        hub_away: (event == Event::HubRestart).then_some((from, to)),
        in_flight: in_flight.len(),
        recovered,
        settled,
        run_twice: bed.completer.run_twice(),
        keys,
    })
}

impl EventRun {
    /// The writes that failed for the platform's sake: every failed write but those sent
    /// while the hub's API server was away, or in flight when it went, and never
    /// answered (no platform answers for an API server that is not there).
    pub fn failed(&self) -> Vec<&crate::write_load::Write> {
        self.report
            .failed()
            .into_iter()
            .filter(|w| !self.unreachable(w))
            .collect()
    }

    /// Failed writes the hub's absence explains.
    pub fn unanswered(&self) -> usize {
        self.report
            .failed()
            .into_iter()
            .filter(|w| self.unreachable(w))
            .count()
    }

    fn unreachable(&self, write: &crate::write_load::Write) -> bool {
        !write.answered
            && self
                .hub_away
                .is_some_and(|(from, to)| write.sent <= to && write.sent + write.latency >= from)
    }

    /// One line of figures.
    pub fn figures(&self) -> String {
        use crate::write_load::latency_ms;
        let before = self.report.between(Duration::ZERO, self.during.0);
        let during = self.report.between(self.during.0, self.during.1);
        format!(
            "{} writes ({:?}), {} failed, {} unanswered while the hub's API server was away; p50/p99 before {:.0}/{:.0} ms, during the event ({:.1} s, {} writes) {:.0}/{:.0} ms (max {:.0}); {} attempts in flight at its start had their results {:.1} s after it; all results {:.1} s after the load; {} attempts run twice",
            self.report.writes.len(),
            self.report.counts(),
            self.failed().len(),
            self.unanswered(),
            latency_ms(&before, 0.5),
            latency_ms(&before, 0.99),
            (self.during.1 - self.during.0).as_secs_f64(),
            during.len(),
            latency_ms(&during, 0.5),
            latency_ms(&during, 0.99),
            latency_ms(&during, 1.0),
            self.in_flight,
            self.recovered.took.as_secs_f64(),
            self.settled.took.as_secs_f64(),
            self.run_twice.len(),
        )
    }
}
