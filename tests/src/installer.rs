//! The installer's test environment: a hub and an edge control plane, the CRDs and the
//! platform namespace, a published sealing key, a registered Edge (optionally behind a
//! [`TcpProxy`] so its API can be cut), a chart repository and the [`JobRunner`]; and the
//! real `providers-webhook controller` processes, started and killed by the tests.
//!
//! The environment is shared by the tests of one test binary. Its servers run on a Tokio
//! runtime of their own, so they outlive the runtime of whichever test started them.

use std::{
    future::Future,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::OnceLock,
    time::Duration,
};

use anyhow::{Context, bail};
use k8s_openapi::{
    api::{
        authentication::v1::{TokenRequest, TokenRequestSpec},
        core::v1::{Secret, ServiceAccount},
        events::v1::Event,
    },
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, PostParams},
};
use providers_shared::{
    api::{
        Edge, EdgeSpec, ExecutionRule, Owner, Plan, RuntimeCredential, SealedPlan, SecretKeyRef,
        Workspace, WorkspaceIdentity, WorkspaceSpec,
    },
    seal::Sealer,
};
use serde_json::{Value, json};
use tokio::{runtime::Runtime, sync::OnceCell};

use crate::{
    binaries, chartrepo::ChartRepo, controlplane::ControlPlaneInfo, jobrunner::JobRunner, platform,
    ports::free_port, supervised::Supervised, tcpproxy::TcpProxy, users::User, webhook,
};

/// The registered Edge.
pub const EDGE: &str = "edge-1";
/// Its cluster ID and edge workspace UUID.
pub const CLUSTER: &str = "cluster-edge-1";
pub const EDGE_WORKSPACE: &str = "0b7c2f0e-5d1a-4c59-9f3e-7a1d2c3b4a51";
/// The platform namespace on the hub.
pub const SYSTEM: &str = webhook::SYSTEM_NAMESPACE;
/// Where the edges' kubeconfig Secrets live (manifests/namespace/), the only namespace where
/// the installer reads Secrets.
pub const EDGE_CREDENTIALS: &str = "providers-edges";
/// The seed of the tests' sealing key.
const SEED: [u8; 32] = [42; 32];

/// The charts the repository serves: `(chart, versions)`.
pub const CHARTS: &[(&str, &[&str])] = &[
    ("hello", &["0.1.0", "0.2.0"]),
    ("hooked", &["0.1.0"]),
    ("broken", &["0.1.0"]),
];

/// The runtime that runs the environment's servers.
fn background() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("installer-env")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("the environment's runtime starts: {e}"))
    })
}

/// How the environment is built.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Register the edge through a TCP proxy the tests can cut.
    pub proxied_edge: bool,
}

/// The shared environment.
pub struct Environment {
    pub hub: ControlPlaneInfo,
    pub edge: ControlPlaneInfo,
    pub repo: ChartRepo,
    pub runner: JobRunner,
    pub proxy: Option<TcpProxy>,
    pub sealer: Sealer,
    _planes: Vec<Supervised>,
}

/// The environment of this test binary, started on first use.
pub async fn environment(
    controlplane_bin: &Path,
    options: Options,
) -> anyhow::Result<&'static Environment> {
    static ENVIRONMENT: OnceCell<Environment> = OnceCell::const_new();
    let bin = controlplane_bin.to_path_buf();
    ENVIRONMENT
        .get_or_try_init(|| async move {
            background()
                .spawn(Environment::start(bin, options))
                .await
                .context("the environment's start task")?
        })
        .await
}

impl Environment {
    async fn start(bin: PathBuf, options: Options) -> anyhow::Result<Self> {
        let (hub, edge) = {
            let hub_bin = bin.clone();
            let hub = tokio::task::spawn_blocking(move || Supervised::start(&hub_bin, "hub"));
            let edge = tokio::task::spawn_blocking(move || Supervised::start(&bin, EDGE));
            (hub.await??, edge.await??)
        };
        let hub_info = hub.info.clone();
        let edge_info = edge.info.clone();
        let sealer = Sealer::from_seed(SEED);
        {
            let hub_info = hub_info.clone();
            let key_id = sealer.key_id().to_owned();
            let pem = sealer.public_key_pem();
            tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
                platform::install(&hub_info)?;
                webhook::publish_keys(&hub_info, &key_id, &pem)
            })
            .await??;
        }
        let repo = ChartRepo::start(CHARTS).await?;
        let runner = JobRunner::start(&edge_info).await?;
        let proxy = if options.proxied_edge {
            let target: SocketAddr = edge_info
                .server
                .trim_start_matches("https://")
                .parse()
                .context("the edge's address")?;
            Some(TcpProxy::start(target).await?)
        } else {
            None
        };
        let environment = Self {
            hub: hub_info,
            edge: edge_info,
            repo,
            runner,
            proxy,
            sealer,
            _planes: vec![hub, edge],
        };
        environment.register_edge().await?;
        // The plans' owner: the installer asks RBAC again before it starts an attempt.
        platform::grant_install(&environment.hub_admin().await?, "alice", EDGE).await?;
        Ok(environment)
    }

    /// The Edge and its kubeconfig Secret (the edge's platform-admin kubeconfig, pointing
    /// at the proxy when there is one).
    async fn register_edge(&self) -> anyhow::Result<()> {
        let server = self.proxy.as_ref().map(|p| format!("https://{}", p.addr));
        register_edge(
            &self.hub,
            &self.edge,
            EDGE,
            CLUSTER,
            EDGE_WORKSPACE,
            server.as_deref(),
        )
        .await
    }

    /// Cuts the edge's API off (only with [`Options::proxied_edge`]).
    pub fn cut_edge(&self) -> anyhow::Result<()> {
        self.proxy
            .as_ref()
            .context("the edge is not proxied")?
            .cut();
        Ok(())
    }

    /// Brings the edge's API back at the same address.
    pub fn restore_edge(&self) -> anyhow::Result<()> {
        let _context = background().enter();
        self.proxy
            .as_ref()
            .context("the edge is not proxied")?
            .restore()?;
        Ok(())
    }

    pub async fn hub_admin(&self) -> anyhow::Result<Client> {
        self.hub.client(User::Admin).await
    }

    pub async fn edge_admin(&self) -> anyhow::Result<Client> {
        self.edge.client(User::Admin).await
    }

    /// A plan for a Workspace, as the webhook would seal it.
    pub fn plan(&self, spec: &PlanSpec, attempt: i64, uid: &str) -> Plan {
        let identity = WorkspaceIdentity {
            namespace: spec.org.clone(),
            name: spec.name.clone(),
            uid: uid.to_owned(),
        };
        let mut values = spec.values.clone();
        if let Some(credential) = &spec.runtime_credential {
            providers_shared::tenant_values::set_path(
                &mut values,
                &credential.value_path,
                Value::String(providers_shared::plan::runtime_credential_secret(
                    &spec.name,
                )),
            );
        }
        Plan {
            drift: None,
            attempt,
            attempt_id: random_id(),
            retry: attempt - 1,
            job: providers_shared::plan::job_name(&identity, &spec.release, attempt),
            workspace: identity,
            org: spec.org.clone(),
            provider: spec.chart.clone(),
            owner: Owner {
                username: "alice".into(),
                uid: "uid-alice".into(),
                groups: vec!["tenants".into(), "system:authenticated".into()],
                ..Default::default()
            },
            chart: providers_shared::api::ChartRef {
                repository: self.repo.url.clone(),
                name: spec.chart.clone(),
            },
            version: spec.version.clone(),
            release: spec.release.clone(),
            namespace: spec.namespace.clone(),
            // Inline, as plans sealed before values were stored by digest: the
            // installer still runs them (the webhook's tests run the digest path).
            values_digest: None,
            values: Some(values),
            edge_name: spec.edge.clone(),
            cluster: CLUSTER.into(),
            edge_workspace_uuid: EDGE_WORKSPACE.into(),
            execution: spec.execution.clone(),
            runtime_credential: spec.runtime_credential.clone(),
            sealed_at: Some(Time(Timestamp::now())),
            dry_run: false,
            cause: None,
            restores: None,
        }
    }

    /// Seals a plan with the published key.
    pub fn seal(&self, plan: Plan) -> anyhow::Result<SealedPlan> {
        Ok(self.sealer.seal(plan)?)
    }

    /// Creates a Workspace with `plan` sealed (written as admin: no webhook runs here).
    pub async fn create_workspace(
        &self,
        hub: &Client,
        spec: &PlanSpec,
        plan: Plan,
    ) -> anyhow::Result<Workspace> {
        let sealed = self.seal(plan)?;
        self.create_sealed(hub, spec, sealed).await
    }

    /// Creates a Workspace with a plan as given, sealed or not.
    pub async fn create_sealed(
        &self,
        hub: &Client,
        spec: &PlanSpec,
        sealed: SealedPlan,
    ) -> anyhow::Result<Workspace> {
        let mut workspace = Workspace::new(
            &spec.name,
            WorkspaceSpec {
                recipe: spec.chart.clone(),
                edge: spec.edge.clone(),
                version: None,
                values: None,
                retry: None,
                plan: Some(sealed),
            },
        );
        workspace.metadata.namespace = Some(spec.org.clone());
        workspace.metadata.labels = Some([(CASE_LABEL.to_owned(), spec.case.clone())].into());
        Ok(Api::<Workspace>::namespaced(hub.clone(), &spec.org)
            .create(&PostParams::default(), &workspace)
            .await?)
    }

    /// Starts a controller for the Workspaces of `case`, alone on its own lease.
    pub async fn controller_for(&self, case: &str) -> anyhow::Result<ControllerProcess> {
        self.controller(ControllerOptions::new(
            case,
            &format!("{case}-0"),
            &format!("lease-{case}"),
        ))
        .await
    }

    /// Starts a controller process.
    pub async fn controller(
        &self,
        options: ControllerOptions,
    ) -> anyhow::Result<ControllerProcess> {
        ControllerProcess::start(&self.hub, options).await
    }
}

/// The label that ties a test's Workspaces to that test's controller
/// (`--workspace-selector`), so tests running at the same time never share a controller.
pub const CASE_LABEL: &str = "installer-test/case";

/// Registers `edge` on `hub` as the Edge `name`: a Secret with a kubeconfig of the hub's
/// identity on the edge — the shipped manifests/edge/ (RBAC and confinement policy) applied
/// there, and a token of its ServiceAccount — with its server replaced by `server` when
/// given, and the Edge object.
pub async fn register_edge(
    hub: &ControlPlaneInfo,
    edge: &ControlPlaneInfo,
    name: &str,
    cluster: &str,
    workspace_uuid: &str,
    server: Option<&str>,
) -> anyhow::Result<()> {
    let admin = hub.client(User::Admin).await?;
    let mut kubeconfig = hub_identity_on(edge).await?;
    if let Some(server) = server {
        kubeconfig = kubeconfig.replace(&edge.server, server);
    }
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-kubeconfig"), "namespace": EDGE_CREDENTIALS},
        "stringData": {"kubeconfig": kubeconfig},
    }))?;
    Api::<Secret>::namespaced(admin.clone(), EDGE_CREDENTIALS)
        .create(&PostParams::default(), &secret)
        .await
        .context("the edge's kubeconfig Secret")?;
    let object = Edge::new(
        name,
        EdgeSpec {
            cluster_id: cluster.into(),
            workspace_uuid: workspace_uuid.into(),
            kubeconfig_secret_ref: SecretKeyRef {
                namespace: EDGE_CREDENTIALS.into(),
                name: format!("{name}-kubeconfig"),
                key: "kubeconfig".into(),
            },
        },
    );
    Api::<Edge>::all(admin)
        .create(&PostParams::default(), &object)
        .await
        .context("the Edge")?;
    Ok(())
}

/// The shipped edge manifests (manifests/edge/) applied on `edge`, and a kubeconfig for the
/// hub's identity there.
pub async fn hub_identity_on(edge: &ControlPlaneInfo) -> anyhow::Result<String> {
    let manifests = binaries::workspace_root()?.join("manifests/edge");
    let admin_kubeconfig = edge.kubeconfig(User::Admin).to_path_buf();
    let token = tokio::task::spawn_blocking(move || -> anyhow::Result<String> {
        crate::kubectl::ok(
            &admin_kubeconfig,
            &[
                "apply",
                "--server-side",
                "--field-manager=platform",
                "-k",
                &manifests.display().to_string(),
            ],
        )?;
        crate::kubectl::ok(
            &admin_kubeconfig,
            &[
                "-n",
                "providers-system",
                "create",
                "token",
                "providers-hub",
                "--duration=48h",
            ],
        )
    })
    .await??;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("hub-on-edge.kubeconfig");
    crate::kubeconfig::write(
        &path,
        &edge.name,
        &edge.server,
        &edge.ca_pem()?,
        "providers-hub",
        token.trim(),
        None,
    )?;
    Ok(std::fs::read_to_string(path)?)
}

/// What a test's Workspace installs.
#[derive(Clone, Debug)]
pub struct PlanSpec {
    /// The test case: the value of [`CASE_LABEL`].
    pub case: String,
    pub org: String,
    pub name: String,
    pub chart: String,
    pub version: String,
    pub release: String,
    pub namespace: String,
    pub values: Value,
    pub execution: Vec<ExecutionRule>,
    pub runtime_credential: Option<RuntimeCredential>,
    /// The Edge the plan targets ([`EDGE`] unless a test registered others).
    pub edge: String,
}

impl PlanSpec {
    /// The `hello` chart at 0.1.0, released as `hello` into `namespace`, allowed to manage
    /// ConfigMaps there.
    pub fn hello(case: &str, org: &str, name: &str, namespace: &str) -> Self {
        Self {
            case: case.into(),
            org: org.into(),
            name: name.into(),
            chart: "hello".into(),
            version: "0.1.0".into(),
            release: "hello".into(),
            namespace: namespace.into(),
            values: json!({"greeting": format!("hello from {name}")}),
            execution: vec![rule("", "configmaps")],
            runtime_credential: None,
            edge: EDGE.into(),
        }
    }
}

/// Every verb Helm uses on one resource.
pub fn rule(group: &str, resource: &str) -> ExecutionRule {
    ExecutionRule {
        api_groups: vec![group.into()],
        resources: vec![resource.into()],
        verbs: [
            "get", "list", "watch", "create", "update", "patch", "delete",
        ]
        .map(String::from)
        .to_vec(),
    }
}

fn random_id() -> String {
    let mut bytes = [0u8; 12];
    let _ = getrandom::fill(&mut bytes);
    hex::encode(bytes)
}

/// How a controller process runs.
#[derive(Clone, Debug)]
pub struct ControllerOptions {
    /// The test case whose Workspaces it reconciles.
    pub case: String,
    pub identity: String,
    pub lease: String,
    /// Actions after which the process exits (`PROVIDERS_FAULT_EXIT_AFTER`).
    pub exit_after: Option<String>,
    /// Actions after which the process stops itself, once (`PROVIDERS_FAULT_FREEZE_AFTER`);
    /// SIGCONT resumes it.
    pub freeze_after: Option<String>,
    /// The Leases' duration, renew deadline and retry period in seconds: 6, 4 and 1 unless
    /// set (the shipped 15, 10 and 2 for figures an operator would see).
    pub lease_timing: [u64; 3],
    /// More arguments.
    pub args: Vec<String>,
    /// Run under `providers-controlplane supervise`, which kills the controller when this
    /// process ends: for a controller held in a `static`, which is never dropped. Its
    /// [`ControllerProcess::pid`] is then unknown.
    pub supervised: bool,
}

impl ControllerOptions {
    /// A controller for the Workspaces of `case`, named `identity`, electing with `lease`.
    pub fn new(case: &str, identity: &str, lease: &str) -> Self {
        Self {
            case: case.into(),
            identity: identity.into(),
            lease: lease.into(),
            exit_after: None,
            freeze_after: None,
            lease_timing: [6, 4, 1],
            args: Vec::new(),
            supervised: false,
        }
    }

    /// The same, killed when the test process ends (see [`Self::supervised`]).
    pub fn supervised(mut self) -> Self {
        self.supervised = true;
        self
    }
}

/// A `providers-webhook controller` process. Dropping it kills it.
pub struct ControllerProcess {
    child: Option<Child>,
    supervised: bool,
    pub identity: String,
    pub log: PathBuf,
    pub metrics: SocketAddr,
    _dir: tempfile::TempDir,
}

impl ControllerProcess {
    /// Starts a controller for `hub`.
    /// Starts a controller for `hub`, as the least-privilege ServiceAccount of
    /// manifests/controller/rbac.yaml (a token from the TokenRequest API).
    pub async fn start(hub: &ControlPlaneInfo, options: ControllerOptions) -> anyhow::Result<Self> {
        let bin = binaries::cargo_bin("providers-webhook")?;
        stale_check(&bin)?;
        let dir = tempfile::Builder::new()
            .prefix("providers-controller-")
            .tempdir()?;
        let kubeconfig = controller_kubeconfig(hub, dir.path()).await?;
        let log = dir.path().join(format!("{}.log", options.identity));
        let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let mut command = if options.supervised {
            let mut supervisor = Command::new(binaries::cargo_bin("providers-controlplane")?);
            supervisor.arg("supervise").arg(&bin);
            supervisor
        } else {
            Command::new(&bin)
        };
        command
            .arg("controller")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--namespace", SYSTEM])
            .args(["--lease-name", &options.lease])
            .args(["--identity", &options.identity])
            .args(["--metrics-listen", &metrics.to_string()])
            .args([
                "--lease-duration",
                &options.lease_timing[0].to_string(),
                "--renew-deadline",
                &options.lease_timing[1].to_string(),
                "--retry-period",
                &options.lease_timing[2].to_string(),
            ])
            .args([
                "--edge-probe-interval",
                "1",
                "--edge-probe-max-backoff",
                "4",
            ])
            .args([
                "--job-deadline",
                "120",
                "--preparation-ttl",
                "60",
                "--resync",
                "30",
            ])
            .args(["--hub-server", &hub.server])
            .args(&options.args)
            // Debug lines of the code the binary runs: the installer is the crate
            // providers-installer (the tests read a reconcile's `execute: done`), its admin
            // port providers-runtime's.
            .env(
                "RUST_LOG",
                "info,providers_webhook=debug,providers_installer=debug,providers_edge_watch=debug,providers_runtime=debug,kube=warn",
            )
            .env("NO_COLOR", "1")
            .env_remove(FAULT)
            // The supervisor kills the controller when this end of the pipe closes.
            .stdin(if options.supervised {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?);
        // An empty case: every Workspace (Workspaces made through the webhook and the plugin
        // carry no case label).
        if !options.case.is_empty() {
            command.args([
                "--workspace-selector",
                &format!("{CASE_LABEL}={}", options.case),
            ]);
        }
        if let Some(actions) = &options.exit_after {
            command.env(FAULT, actions);
        }
        if let Some(actions) = &options.freeze_after {
            command.env("PROVIDERS_FAULT_FREEZE_AFTER", actions);
        }
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        Ok(Self {
            child: Some(child),
            supervised: options.supervised,
            identity: options.identity,
            log,
            metrics,
            _dir: dir,
        })
    }

    /// Kills the process (SIGKILL: no lease release, no cleanup) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            if self.supervised {
                // The supervisor kills the controller (SIGKILL) and exits.
                drop(child.stdin.take());
            } else {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }

    /// Waits up to `timeout` for the process to exit on its own.
    pub async fn exited(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                self.child = None;
                return Ok(status);
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "{} did not exit within {timeout:?}:\n{}",
                    self.identity,
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The process ID while it runs (not known when supervised).
    pub fn pid(&self) -> Option<u32> {
        if self.supervised {
            return None;
        }
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process runs.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// The process's log so far, without terminal color codes.
    pub fn log_text(&self) -> String {
        strip_ansi(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }

    /// The last lines of its log, for failure messages.
    pub fn log_tail(&self) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Its /metrics text.
    pub async fn scrape(&self) -> anyhow::Result<String> {
        self.admin_get("/metrics").await
    }

    /// Its /readyz answer, status line and body.
    pub async fn readyz(&self) -> anyhow::Result<String> {
        self.admin_get("/readyz").await
    }

    /// One GET on its admin port: the whole answer as text.
    async fn admin_get(&self, path: &str) -> anyhow::Result<String> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(self.metrics).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await?;
        Ok(text)
    }
}

impl Drop for ControllerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The controller's ServiceAccount, RBAC and confinement policy (manifests/controller/) on
/// the hub, and a kubeconfig with a token of that account.
pub async fn controller_kubeconfig(hub: &ControlPlaneInfo, dir: &Path) -> anyhow::Result<PathBuf> {
    let root = binaries::workspace_root()?;
    let mut documents = Vec::new();
    for file in ["rbac.yaml", "confinement.yaml"] {
        let manifest = root.join("manifests/controller").join(file);
        documents.push(
            std::fs::read_to_string(&manifest)
                .with_context(|| format!("reading {}", manifest.display()))?,
        );
    }
    let yaml = documents.join("\n---\n");
    let admin_kubeconfig = hub.kubeconfig(User::Admin).to_path_buf();
    tokio::task::spawn_blocking(move || platform::apply_yaml(&admin_kubeconfig, &yaml)).await??;
    let accounts: Api<ServiceAccount> = Api::namespaced(hub.client(User::Admin).await?, SYSTEM);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        }),
        ..Default::default()
    };
    let token = accounts
        .create_token_request("providers-controller", &PostParams::default(), &request)
        .await
        .context("a token for the controller's ServiceAccount")?
        .status
        .and_then(|s| s.token)
        .context("no token in the TokenRequest's answer")?;
    let path = dir.join("controller.kubeconfig");
    crate::kubeconfig::write(
        &path,
        &hub.name,
        &hub.server,
        &hub.ca_pem()?,
        "providers-controller",
        &token,
        Some(SYSTEM),
    )?;
    Ok(path)
}

/// Text without ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The crash-point variable of the controller.
pub const FAULT: &str = "PROVIDERS_FAULT_EXIT_AFTER";

/// Refuses a `providers-webhook` binary older than the controller's or the state
/// machine's sources: the tests would exercise old code.
fn stale_check(bin: &Path) -> anyhow::Result<()> {
    let built = std::fs::metadata(bin)?.modified()?;
    // Cargo's dep-info file next to the binary lists the sources it was built from.
    let Ok(depinfo) = std::fs::read_to_string(bin.with_extension("d")) else {
        return Ok(());
    };
    let line = depinfo.lines().next().unwrap_or_default();
    let sources = line.split_once(": ").map(|(_, s)| s).unwrap_or_default();
    for source in sources.replace("\\ ", "\u{0}").split_whitespace() {
        let path = PathBuf::from(source.replace('\u{0}', " "));
        if std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .is_ok_and(|m| m > built)
        {
            bail!(
                "{} is older than {}: run `cargo build -p providers-webhook` (with --release for a release test run) first",
                bin.display(),
                path.display()
            );
        }
    }
    Ok(())
}

/// Polls `check` every 200 ms until it returns `Some`, or fails after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = String::new();
    loop {
        match check().await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => {}
            Err(error) => last = format!("{error:#}"),
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what} {last}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A Workspace, read from the hub.
pub async fn workspace(hub: &Client, org: &str, name: &str) -> anyhow::Result<Workspace> {
    Ok(Api::<Workspace>::namespaced(hub.clone(), org)
        .get(name)
        .await?)
}

/// Waits up to 90 s until the Workspace passes `check`.
pub async fn wait_workspace(
    hub: &Client,
    org: &str,
    name: &str,
    what: &str,
    check: impl Fn(&Workspace) -> bool,
) -> anyhow::Result<Workspace> {
    eventually(what, Duration::from_secs(90), || async {
        let ws = workspace(hub, org, name).await?;
        Ok(check(&ws).then_some(ws))
    })
    .await
}

/// A Workspace's status, or the empty one.
pub fn status_of(ws: &Workspace) -> providers_shared::api::WorkspaceStatus {
    ws.status.clone().unwrap_or_default()
}

/// A Workspace's condition.
pub fn condition<'a>(workspace: &'a Workspace, kind: &str) -> Option<&'a Condition> {
    workspace.status.as_ref()?.condition(kind)
}

/// Whether a condition has this status and reason.
pub fn has_condition(workspace: &Workspace, kind: &str, status: &str, reason: &str) -> bool {
    condition(workspace, kind).is_some_and(|c| c.status == status && c.reason == reason)
}

/// Writes a new sealed attempt into a Workspace, as the webhook does for a retry (raising
/// `spec.retry`) — as admin, with no webhook registered.
pub async fn retry(
    hub: &Client,
    org: &str,
    name: &str,
    sealed: SealedPlan,
) -> anyhow::Result<Workspace> {
    let api: Api<Workspace> = Api::namespaced(hub.clone(), org);
    let mut workspace = api.get(name).await?;
    workspace.spec.retry = Some(workspace.spec.retry.unwrap_or(0) + 1);
    workspace.spec.plan = Some(sealed);
    Ok(api
        .replace(name, &PostParams::default(), &workspace)
        .await?)
}

/// Sets a Job's terminal status as the job controller does for a failed Pod.
pub async fn fail_job(edge: &Client, namespace: &str, name: &str) -> anyhow::Result<()> {
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let condition = |kind: &str| {
        json!({"type": kind, "status": "True", "reason": "BackoffLimitExceeded",
               "message": "Job has reached the specified backoff limit",
               "lastProbeTime": now, "lastTransitionTime": now})
    };
    let status = json!({"status": {
        "startTime": now, "active": 0, "failed": 1,
        "conditions": [condition("FailureTarget"), condition("Failed")],
    }});
    Api::<k8s_openapi::api::batch::v1::Job>::namespaced(edge.clone(), namespace)
        .patch_status(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(status),
        )
        .await?;
    Ok(())
}

/// The Events about a Workspace (by its UID) as `(reason, note)`, oldest first.
pub async fn events(hub: &Client, workspace: &Workspace) -> anyhow::Result<Vec<(String, String)>> {
    let api: Api<Event> = Api::namespaced(hub.clone(), &workspace.namespace().unwrap_or_default());
    let uid = workspace.uid().unwrap_or_default();
    let mut events: Vec<Event> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.uid.as_deref()) == Some(uid.as_str()))
        .collect();
    events.sort_by_key(|e| e.event_time.as_ref().map(|t| t.0));
    Ok(events
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect())
}

/// The reasons of the Events about a Workspace, oldest first.
pub async fn event_reasons(hub: &Client, workspace: &Workspace) -> anyhow::Result<Vec<String>> {
    Ok(events(hub, workspace)
        .await?
        .into_iter()
        .map(|(reason, _)| reason)
        .collect())
}
