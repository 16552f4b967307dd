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
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams},
};
use providers::api::{ChartRef, Recipe, RecipeSpec, ValueField, ValueType, Workspace};

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
    pub installers: Vec<ControllerProcess>,
    pub completer: JobCompleter,
    started_installers: usize,
}

impl Bed {
    /// Starts the control planes, the platform, `webhooks` webhook replicas and
    /// `installers` installer replicas (`--shard-edges`); a Job in `fail_every` fails.
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
        let service = Balancer::start().await?;
        let completer = JobCompleter::start(edge.info.client(User::Admin).await?, fail_every);
        let mut bed = Self {
            hub,
            edge,
            webhook,
            service,
            replicas: Vec::new(),
            tls,
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

    /// Starts one more installer replica.
    pub async fn add_installer(&mut self) -> anyhow::Result<()> {
        self.started_installers += 1;
        let identity = format!("installer-{}", self.started_installers);
        let process = ControllerProcess::start(
            &self.hub.info,
            ControllerOptions {
                args: ["--shard-edges", "--concurrency", "16"]
                    .map(String::from)
                    .to_vec(),
                ..ControllerOptions::new("", &identity, LEASE)
            },
        )
        .await?;
        self.installers.push(process);
        Ok(())
    }

    /// Replaces every installer replica, one at a time, as a rolling update does: the new
    /// one started, then the old one sent SIGTERM and gone before the next.
    pub async fn roll_installers(&mut self) -> anyhow::Result<()> {
        let old = std::mem::take(&mut self.installers);
        for mut process in old {
            self.add_installer().await?;
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
                    .map(|ws| ws.name_any())
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

    /// Which installer replica logs, for failure messages.
    pub fn installer_logs(&self) -> String {
        self.installers
            .iter()
            .map(|p| format!("--- {}\n{}", p.identity, p.log_tail()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

async fn restart(plane: &Supervised) -> anyhow::Result<()> {
    // The supervisor answers on a blocking pipe.
    tokio::task::block_in_place(|| plane.restart_apiserver())
        .with_context(|| format!("restarting {}'s kube-apiserver", plane.info.name))
}

/// The end of a load: how long until every attempt had its result, and those that had
/// none by the deadline.
#[derive(Debug)]
pub struct Settled {
    pub took: Duration,
    pub waiting: Vec<String>,
}

/// The Recipe the load installs: the demo chart's shape, one string value.
async fn publish_recipe(admin: &Client) -> anyhow::Result<()> {
    let recipe = Recipe::new(
        RECIPE,
        RecipeSpec {
            drift: None,
            chart: ChartRef {
                repository: REPOSITORY.into(),
                name: "hello".into(),
            },
            versions: vec!["0.1.0".into()],
            // A release namespace per Workspace: the load creates and deletes many.
            namespace: Some("{org}-{workspace}".into()),
            release: None,
            values: Some(serde_json::json!({"hub": {"credentialSecret": ""}})),
            values_schema: vec![ValueField {
                path: "greeting".into(),
                type_: ValueType::String,
                description: None,
                enum_: None,
                pattern: None,
                max_length: Some(64),
                minimum: None,
                maximum: None,
            }],
            execution: vec![installer::rule("", "configmaps")],
            runtime_credential: None,
        },
    );
    Api::<Recipe>::all(admin.clone())
        .patch(
            RECIPE,
            &PatchParams::apply("platform").force(),
            &Patch::Apply(&recipe),
        )
        .await?;
    Ok(())
}
