//! Whole reconciles of one Workspace, run against two in-memory API servers, the hub and
//! the edge (`support::api_double`), through the real `Context`, registry and edge caches:
//! each test asserts the requests both were sent, in order, and what the Workspace's
//! status says. A file per scenario; here the world they share.
//!
//! The edge's watches are not run: the test says when they have caught up
//! ([`World::watches_catch_up`]), and the caches then list what the edge holds
//! (`providers_edge_watch::fed`). Between those points, the caches know only the installer's own
//! writes, as in production while a watch lags.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::{
        batch::v1::{Job, JobCondition, JobStatus},
        core::v1::{ConfigMap, Namespace, Secret, ServiceAccount},
        rbac::v1::{Role, RoleBinding},
    },
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::runtime::controller::Action as Requeue;
use providers_shared::{
    api::{JobResult, Plan, Workspace, WorkspaceStatus},
    installer::{EdgeRoute, EdgeState, Settings, names},
    seal::Sealer,
    testing,
};

use crate::{
    edge::credential::HubEndpoint,
    reconcile::{
        context::Context,
        workspace::{Reconciler, reconcile},
    },
    support::{
        api_double::ApiDouble,
        config::{InstallerConfig, LeaseConfig, ProbeSettings},
        error::Error,
        metrics::Metrics,
    },
};
use providers_edge_watch::fed::{FedCache, Listed};

mod create;
mod delete;
mod drift;
mod edge_down;
mod edge_lost;
mod retry;

/// The Workspace every scenario reconciles, and its edge.
const NAMESPACE: &str = "org-a";
const NAME: &str = "ws";
const EDGE: &str = "edge-1";
/// The release namespace and Job of [`testing::plan`].
const RELEASE_NAMESPACE: &str = "org-a-hello";

/// The hub and the edge, and the installer's handles over them.
struct World {
    hub: ApiDouble,
    edge: ApiDouble,
    ctx: Arc<Context>,
    reconciler: Arc<Reconciler>,
    caches: FedCache,
    sealer: Sealer,
}

impl World {
    /// The installer with the published keys read, the edge's Lease held and the edge
    /// probed Ready, its caches listed empty.
    fn new() -> Self {
        Self::with_settings(Settings::default())
    }

    /// [`World::new`], the installer running with `settings`.
    fn with_settings(settings: Settings) -> Self {
        let hub = ApiDouble::new("hub", "system:serviceaccount:providers-system:installer");
        let edge = hub.beside(
            "edge",
            "system:serviceaccount:providers-system:edge-installer",
        );
        let ctx = Context::new(
            hub.client(),
            config(),
            settings,
            Arc::new(Metrics::new()),
            HubEndpoint {
                server: "https://hub.example".into(),
                ca_pem: "PEM".into(),
                ttl_seconds: 3600,
            },
        );
        let sealer = Sealer::from_seed([7; 32]);
        ctx.keys.read(&keys_of(&sealer));
        ctx.shards.renewed(EDGE, tokio::time::Instant::now());
        let caches = FedCache::new();
        ctx.edges.record_probe(
            EDGE,
            EdgeState::Ready(route()),
            Some((edge.client(), caches.cache.clone())),
        );
        let ctx = Arc::new(ctx);
        Self {
            reconciler: Arc::new(Reconciler::new(ctx.clone())),
            hub,
            edge,
            ctx,
            caches,
            sealer,
        }
    }

    /// A Workspace created with `plan` sealed, as the webhook admits it (with the
    /// installer's finalizer) and the API server stores it.
    fn create_workspace(&self, plan: Plan) -> Workspace {
        let mut workspace = testing::workspace_in(
            NAMESPACE,
            NAME,
            providers_shared::api::WorkspaceSpec {
                recipe: "hello".into(),
                plan: Some(self.sealer.seal(plan).expect("the plan seals")),
                ..testing::workspace_spec()
            },
        );
        workspace.metadata.finalizers = Some(vec![names::FINALIZER.into()]);
        self.hub.put(&workspace)
    }

    /// One reconcile of the Workspace as the hub stores it now (the watch cache caught up).
    async fn reconcile(&self) -> Result<Requeue, Error> {
        let cached = self.workspace();
        reconcile(Arc::new(cached), self.reconciler.clone()).await
    }

    /// The edge's watches catch up: every cache lists what the edge holds now.
    fn watches_catch_up(&mut self) {
        let listed = Listed {
            namespaces: self.edge.all::<Namespace>(),
            service_accounts: self.edge.all::<ServiceAccount>(),
            roles: self.edge.all::<Role>(),
            role_bindings: self.edge.all::<RoleBinding>(),
            jobs: self.edge.all::<Job>(),
            secrets: self.edge.all::<Secret>(),
        };
        self.caches.relist(&listed);
    }

    /// The Workspace as the hub stores it.
    fn workspace(&self) -> Workspace {
        self.hub
            .get(NAMESPACE, NAME)
            .expect("the Workspace is on the hub")
    }

    fn status(&self) -> WorkspaceStatus {
        self.workspace().status.unwrap_or_default()
    }

    /// The reason and message of the Workspace's condition `type_`.
    fn condition(&self, type_: &str) -> (String, String) {
        self.status()
            .conditions
            .into_iter()
            .find(|c| c.type_ == type_)
            .map(|c| (c.reason, c.message))
            .unwrap_or_default()
    }

    /// The Job `name` ends as the job controller ends it: `Complete`, or `Failed` with
    /// `BackoffLimitExceeded`.
    fn job_ends(&self, name: &str, succeeded: bool) {
        let now = Time(Timestamp::now());
        let condition = |type_: &str, reason: &str| JobCondition {
            type_: type_.into(),
            status: "True".into(),
            reason: Some(reason.into()),
            message: Some(format!("the Job is {type_}")),
            last_transition_time: Some(now.clone()),
            ..JobCondition::default()
        };
        self.edge
            .edit::<Job>(RELEASE_NAMESPACE, name, |job| {
                job.status = Some(if succeeded {
                    JobStatus {
                        succeeded: Some(1),
                        completion_time: Some(now.clone()),
                        conditions: Some(vec![condition("Complete", "CompletionsReached")]),
                        ..JobStatus::default()
                    }
                } else {
                    JobStatus {
                        failed: Some(1),
                        conditions: Some(vec![condition("Failed", "BackoffLimitExceeded")]),
                        ..JobStatus::default()
                    }
                });
            })
            .expect("the Job is on the edge");
    }

    /// Helm's record of `revision` of the release `hello`, as `helm upgrade --install`
    /// leaves it: its labels only. Without its content it cannot be decoded, so the
    /// installer reads it again at every check for the objects to follow (seen in the
    /// requests).
    fn helm_records(&self, revision: i64, status: &str) -> Secret {
        let mut record = Secret::default();
        record.metadata.name = Some(format!("sh.helm.release.v1.hello.v{revision}"));
        record.metadata.namespace = Some(RELEASE_NAMESPACE.into());
        record.metadata.labels = Some(
            [
                ("owner", "helm"),
                ("name", "hello"),
                ("status", status),
                ("version", &revision.to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        );
        record.type_ = Some("helm.sh/release.v1".into());
        self.edge.put(&record)
    }

    /// Helm's record of revision 1 of the release `hello`, deployed, with its content:
    /// a release whose manifest is `manifest`, as helm stores it (gzipped JSON, in base64).
    fn helm_record_of(&self, manifest: &str) -> Secret {
        let mut record = self.helm_records(1, "deployed");
        record.data = Some(release_entry(manifest));
        self.edge.put(&record)
    }

    /// Helm's record of revision 1, rewritten in place (the same object) to hold a release
    /// whose manifest is `manifest`, as anyone who may update Secrets there could.
    fn rewrite_helm_record(&self, manifest: &str) {
        self.edge
            .edit::<Secret>(RELEASE_NAMESPACE, "sh.helm.release.v1.hello.v1", |record| {
                record.data = Some(release_entry(manifest));
            })
            .expect("the record is on the edge");
    }

    /// The requests made to the hub and the edge since the last call, in order.
    fn requests(&self) -> Vec<String> {
        self.hub.take_requests()
    }
}

/// A record's `release` entry for a release whose manifest is `manifest`, as helm stores
/// it (gzipped JSON, in base64).
fn release_entry(manifest: &str) -> std::collections::BTreeMap<String, k8s_openapi::ByteString> {
    use std::io::Write;
    let release = serde_json::json!({"name": "hello", "version": 1, "manifest": manifest});
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(release.to_string().as_bytes()).unwrap();
    let encoded = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        gzip.finish().unwrap(),
    );
    [(
        "release".to_owned(),
        k8s_openapi::ByteString(encoded.into_bytes()),
    )]
    .into()
}

/// Attempt 1 of [`testing::plan`] with a value, sealed now, for the edge of [`route`].
fn first_plan() -> Plan {
    Plan {
        sealed_at: Some(Time(Timestamp::now())),
        values: Some(serde_json::json!({"greeting": "hi"})),
        ..testing::plan()
    }
}

/// The edge as its probe found it: [`testing::plan`]'s cluster and workspace.
fn route() -> EdgeRoute {
    EdgeRoute {
        cluster: "c1".into(),
        workspace_uuid: "u1".into(),
        server: "https://edge-1.example".into(),
    }
}

/// The published sealing keys: `sealer`'s public key.
fn keys_of(sealer: &Sealer) -> ConfigMap {
    let mut config_map = ConfigMap::default();
    config_map.metadata.name = Some("sealing-keys".into());
    config_map.data = Some([(format!("{}.pem", sealer.key_id()), sealer.public_key_pem())].into());
    config_map
}

fn config() -> InstallerConfig {
    let hour = Duration::from_secs(3600);
    InstallerConfig {
        namespace: "providers-system".into(),
        keys_config_map: "sealing-keys".into(),
        workspace_selector: String::new(),
        concurrency: 1,
        resync: hour,
        runner_log_history: 3,
        leader: LeaseConfig {
            namespace: "providers-system".into(),
            name: "providers-installer".into(),
            identity: "installer-0".into(),
            duration: hour,
            renew_deadline: hour,
            retry_period: hour,
        },
        probe: ProbeSettings {
            interval: hour,
            max_backoff: hour,
            credentials_namespace: "providers-edges".into(),
            allow_kubeconfig_exec: false,
            watch_streams_per_connection: 1,
        },
        orphan_sweep_interval: hour,
        plan_values_sweep_interval: hour,
        plan_values_grace: k8s_openapi::jiff::SignedDuration::from_secs(3600),
    }
}
