//! One control plane: an etcd and a kube-apiserver on free 127.0.0.1 ports.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use anyhow::{Context, bail};
use k8s_openapi::api::{
    core::v1::Namespace,
    rbac::v1::{ClusterRoleBinding, RoleBinding},
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use providers_shared::organization;
use serde::{Deserialize, Serialize};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    process::{Child, Command},
    time::{Instant, sleep},
};

use crate::{binaries, kubeconfig, pki, ports::free_port, users::User};

/// The ClusterRole the manifests give tenants to read recipes and edges; bound to group `tenants`.
pub const CATALOG_CLUSTER_ROLE: &str = "providers-catalog-reader";
/// The ClusterRole granting `use` on every recipe (manifests/rbac/tenant.yaml).
pub const RECIPE_USER_CLUSTER_ROLE: &str = "providers-recipe-user";

/// Everything a client needs to reach a control plane.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ControlPlaneInfo {
    /// A short name: `hub`, `edge-1`, ...
    pub name: String,
    /// The folder holding certificates, kubeconfigs, data and logs.
    pub dir: PathBuf,
    /// The apiserver's URL.
    pub server: String,
    /// The CA that signed the apiserver's serving certificate (PEM file).
    pub ca_file: PathBuf,
    /// A kubeconfig per user.
    pub kubeconfigs: BTreeMap<User, PathBuf>,
    /// A bearer token per user.
    pub tokens: BTreeMap<User, String>,
    /// The CA of the client certificate the API server presents to webhooks (PEM file):
    /// what a webhook's `--client-ca` names.
    pub webhook_client_ca_file: PathBuf,
    /// That client certificate and its key (PEM files), for tests that call a webhook as
    /// the API server does.
    pub webhook_client_cert_file: PathBuf,
    pub webhook_client_key_file: PathBuf,
    /// A certificate from the same CA for another subject (`system:masters`): what a
    /// webhook must refuse although its CA signed it.
    pub webhook_other_subject_cert_file: PathBuf,
    pub webhook_other_subject_key_file: PathBuf,
}

/// The namespace of the platform's own objects.
pub const SYSTEM_NAMESPACE: &str = "providers-system";

/// The subject common name of the API server's webhook client certificate: what a webhook's
/// `--allowed-client` names.
pub const WEBHOOK_CLIENT_NAME: &str = "kube-apiserver-webhook-client";

impl ControlPlaneInfo {
    /// The kubeconfig file of `user`.
    pub fn kubeconfig(&self, user: User) -> &Path {
        &self.kubeconfigs[&user]
    }

    /// A kube client acting as `user`.
    pub async fn client(&self, user: User) -> anyhow::Result<Client> {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(self.kubeconfig(user))?,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        Ok(Client::try_from(config)?)
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> anyhow::Result<String> {
        Ok(std::fs::read_to_string(&self.ca_file)?)
    }
}

/// A running control plane. Dropping it kills both processes.
pub struct ControlPlane {
    pub info: ControlPlaneInfo,
    etcd: Child,
    apiserver: Child,
    /// How the kube-apiserver was started, to start it again the same way.
    apiserver_command: Command,
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver in `dir` and waits until the apiserver is ready and
    /// the base users, namespaces and bindings exist.
    ///
    /// Ports are picked free, then bound by the child process a moment later; a test
    /// running beside it can take one in between. Such a start is tried again on other
    /// ports, with a fresh etcd data directory.
    pub async fn launch(dir: &Path, name: &str) -> anyhow::Result<Self> {
        const ATTEMPTS: usize = 3;
        let mut attempt = 1;
        loop {
            match Self::launch_once(dir, name).await {
                Err(error)
                    if attempt < ATTEMPTS
                        && format!("{error:#}").contains("address already in use") =>
                {
                    eprintln!("control plane {name}: a port was taken meanwhile; starting again");
                    sleep(Duration::from_millis(500)).await;
                    let _ = std::fs::remove_dir_all(dir.join("etcd-data"));
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn launch_once(dir: &Path, name: &str) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        let ca = pki::Authority::generate(&format!("{name}-ca"))?;
        let serving = ca.issue_serving("kube-apiserver", &["kubernetes", "kubernetes.default"])?;
        let (sa_private, sa_public) = pki::key_pair_pem()?;
        let ca_file = dir.join("ca.crt");
        write_private(&ca_file, &ca.cert_pem)?;
        write_private(&dir.join("apiserver.crt"), &serving.cert_pem)?;
        write_private(&dir.join("apiserver.key"), &serving.key_pem)?;
        write_private(&dir.join("sa.key"), &sa_private)?;
        write_private(&dir.join("sa.pub"), &sa_public)?;
        let admission_config = write_webhook_client(&dir)?;
        let audit_policy = dir.join("audit-policy.yaml");
        std::fs::write(&audit_policy, crate::audit::policy())?;

        let mut tokens = BTreeMap::new();
        let mut token_file = String::new();
        for user in User::ALL {
            let token = random_token()?;
            let groups = user.groups().join(",");
            token_file.push_str(&format!(
                "{token},{},uid-{},\"{groups}\"\n",
                user.name(),
                user.name()
            ));
            tokens.insert(user, token);
        }
        write_private(&dir.join("tokens.csv"), &token_file)?;

        let etcd_port = free_port()?;
        let peer_port = free_port()?;
        let etcd = Command::new(binaries::path("etcd")?)
            .args(["--name", name, "--data-dir"])
            .arg(dir.join("etcd-data"))
            .args([
                "--listen-client-urls",
                &format!("http://127.0.0.1:{etcd_port}"),
            ])
            .args([
                "--advertise-client-urls",
                &format!("http://127.0.0.1:{etcd_port}"),
            ])
            .args([
                "--listen-peer-urls",
                &format!("http://127.0.0.1:{peer_port}"),
            ])
            .args([
                "--initial-advertise-peer-urls",
                &format!("http://127.0.0.1:{peer_port}"),
            ])
            .args([
                "--initial-cluster",
                &format!("{name}=http://127.0.0.1:{peer_port}"),
            ])
            .args(["--unsafe-no-fsync", "--log-level", "warn"])
            .stdout(Stdio::null())
            .stderr(log_file(&dir, "etcd.log")?)
            .kill_on_drop(true)
            .spawn()
            .context("starting etcd")?;
        let mut etcd = etcd;
        wait_for_etcd(etcd_port, &mut etcd, &dir).await?;

        let api_port = free_port()?;
        let server = format!("https://127.0.0.1:{api_port}");
        let mut apiserver_command = Command::new(binaries::path("kube-apiserver")?);
        apiserver_command
            .args(["--etcd-servers", &format!("http://127.0.0.1:{etcd_port}")])
            .args([
                "--bind-address",
                "127.0.0.1",
                "--advertise-address",
                "127.0.0.1",
            ])
            .args(["--secure-port", &api_port.to_string()])
            .arg("--cert-dir")
            .arg(dir.join("apiserver-certs"))
            .arg(format!(
                "--tls-cert-file={}",
                dir.join("apiserver.crt").display()
            ))
            .arg(format!(
                "--tls-private-key-file={}",
                dir.join("apiserver.key").display()
            ))
            .arg(format!("--client-ca-file={}", ca_file.display()))
            .arg(format!(
                "--token-auth-file={}",
                dir.join("tokens.csv").display()
            ))
            .arg(format!(
                "--service-account-key-file={}",
                dir.join("sa.pub").display()
            ))
            .arg(format!(
                "--service-account-signing-key-file={}",
                dir.join("sa.key").display()
            ))
            .args(["--service-account-issuer", &server])
            .args([
                "--service-cluster-ip-range",
                "10.0.0.0/24",
                "--allow-privileged",
            ])
            .args(["--authorization-mode", "RBAC"])
            // The API server presents a client certificate to every webhook, as a platform
            // configures it for a webhook that authenticates its callers.
            .arg(format!(
                "--admission-control-config-file={}",
                admission_config.display()
            ))
            // What the hub's identity on an edge reads of Secrets, for the tests that prove
            // it reads metadata alone (`crate::audit`).
            .arg(format!("--audit-policy-file={}", audit_policy.display()))
            .arg(format!(
                "--audit-log-path={}",
                dir.join(crate::audit::LOG_FILE).display()
            ))
            // There is no kube-controller-manager or kubelet: no endpoints to reconcile.
            .args(["--endpoint-reconciler-type", "none"])
            .args(["--v", "1"])
            .stdout(Stdio::null())
            .kill_on_drop(true);
        let apiserver = apiserver_command
            .stderr(log_file(&dir, "kube-apiserver.log")?)
            .spawn()
            .context("starting kube-apiserver")?;

        let mut kubeconfigs = BTreeMap::new();
        for user in User::ALL {
            let path = dir.join(format!("{}.kubeconfig", user.name()));
            kubeconfig::write(
                &path,
                name,
                &server,
                &ca.cert_pem,
                user.name(),
                &tokens[&user],
                user.org(),
            )?;
            kubeconfigs.insert(user, path);
        }
        let info = ControlPlaneInfo {
            name: name.to_owned(),
            dir: dir.clone(),
            server,
            ca_file,
            kubeconfigs,
            tokens,
            webhook_client_ca_file: dir.join("webhook-client-ca.crt"),
            webhook_client_cert_file: dir.join("webhook-client.crt"),
            webhook_client_key_file: dir.join("webhook-client.key"),
            webhook_other_subject_cert_file: dir.join("webhook-other-subject.crt"),
            webhook_other_subject_key_file: dir.join("webhook-other-subject.key"),
        };
        let mut plane = Self {
            info,
            etcd,
            apiserver,
            apiserver_command,
        };
        plane.wait_ready().await?;
        plane.bootstrap().await?;
        Ok(plane)
    }

    /// Restarts the kube-apiserver as a control-plane upgrade or a crash does: the process
    /// is killed (every watch and connection drops), then started again with the same
    /// flags, port and etcd, and this waits until it is ready again.
    pub async fn restart_apiserver(&mut self) -> anyhow::Result<()> {
        let _ = self.apiserver.kill().await;
        self.apiserver = self
            .apiserver_command
            .stderr(
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(self.info.dir.join("kube-apiserver.log"))?,
            )
            .spawn()
            .context("starting kube-apiserver again")?;
        self.wait_ready().await
    }

    /// Kills the processes and waits for them to exit.
    pub async fn shutdown(mut self) {
        let _ = self.apiserver.kill().await;
        let _ = self.etcd.kill().await;
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let client = self.info.client(User::Admin).await?;
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = self.apiserver.try_wait()? {
                bail!(
                    "kube-apiserver exited ({status}) before it was ready; last log lines:\n{}",
                    tail(&self.info.dir.join("kube-apiserver.log"))
                );
            }
            let request = http::Request::get("/readyz").body(Vec::new())?;
            if let Ok(text) = client.request_text(request).await
                && text.trim() == "ok"
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "kube-apiserver was not ready within 120 s; last log lines:\n{}",
                    tail(&self.info.dir.join("kube-apiserver.log"))
                );
            }
            sleep(Duration::from_millis(250)).await;
        }
    }

    /// The platform admins' binding, the organizations `org-a` (alice) and `org-b` (bob),
    /// onboarded as `kubectl provider org add` does it with each one's recipe grant, and
    /// the catalog readers' binding.
    async fn bootstrap(&self) -> anyhow::Result<()> {
        let client = self.info.client(User::Admin).await?;
        let create = PostParams::default();
        let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
        let platform: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "platform-admins" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin" },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "platform-admins" }],
        }))?;
        bindings.create(&create, &platform).await?;
        for user in [User::Alice, User::Bob] {
            let org = user.org().context("tenants have an org")?;
            onboard(&client, org, &[user.name()]).await?;
            // Every recipe, for each organization's tenants, as docs/security.md shows
            // (a platform grants one recipe with resourceNames instead).
            let recipes: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
                "metadata": { "name": format!("providers-recipe-users-{org}") },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": RECIPE_USER_CLUSTER_ROLE },
                "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user.name() }],
            }))?;
            bindings.create(&create, &recipes).await?;
        }
        let catalog: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "providers-catalog-readers" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CATALOG_CLUSTER_ROLE },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "tenants" }],
        }))?;
        bindings.create(&create, &catalog).await?;
        Ok(())
    }
}

/// Onboards the organization `org` with `users` as its tenants, as `kubectl provider org
/// add` does: the labelled namespace, the tenants' and the installer's RoleBindings.
pub async fn onboard(client: &Client, org: &str, users: &[&str]) -> anyhow::Result<()> {
    let objects = organization::onboarding(&organization::Organization {
        name: org.to_owned(),
        groups: Vec::new(),
        users: users.iter().map(|u| (*u).to_owned()).collect(),
        installer: (
            SYSTEM_NAMESPACE.to_owned(),
            "providers-controller".to_owned(),
        ),
    });
    let apply = PatchParams::apply("kubectl-provider");
    Api::<Namespace>::all(client.clone())
        .patch(org, &apply, &Patch::Apply(&objects.namespace))
        .await?;
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), org);
    for binding in [&objects.tenants, &objects.installer] {
        let name = binding.metadata.name.as_deref().unwrap_or_default();
        bindings.patch(name, &apply, &Patch::Apply(binding)).await?;
    }
    Ok(())
}

/// The webhook client CA and certificate, the kubeconfig that hands the certificate to
/// every webhook (`users: [{name: '*'}]`, as the Kubernetes docs on authenticating API
/// servers to webhooks describe), and the AdmissionConfiguration that names it for both
/// webhook admission plugins. Returns the AdmissionConfiguration's path.
fn write_webhook_client(dir: &Path) -> anyhow::Result<PathBuf> {
    let ca = pki::Authority::generate("webhook-client-ca")?;
    let client = ca.issue_client(WEBHOOK_CLIENT_NAME, &[])?;
    let (ca_file, cert_file, key_file) = (
        dir.join("webhook-client-ca.crt"),
        dir.join("webhook-client.crt"),
        dir.join("webhook-client.key"),
    );
    write_private(&ca_file, &ca.cert_pem)?;
    write_private(&cert_file, &client.cert_pem)?;
    write_private(&key_file, &client.key_pem)?;
    let other = ca.issue_client("system:masters", &[])?;
    write_private(&dir.join("webhook-other-subject.crt"), &other.cert_pem)?;
    write_private(&dir.join("webhook-other-subject.key"), &other.key_pem)?;
    let kubeconfig = dir.join("webhook-admission.kubeconfig");
    write_private(
        &kubeconfig,
        &serde_json::to_string_pretty(&serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "users": [{"name": "*", "user": {
                "client-certificate": cert_file,
                "client-key": key_file,
            }}],
        }))?,
    )?;
    let plugin = |name: &str| {
        serde_json::json!({
            "name": name,
            "configuration": {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "WebhookAdmissionConfiguration",
                "kubeConfigFile": kubeconfig,
            },
        })
    };
    let config = dir.join("admission-config.json");
    write_private(
        &config,
        &serde_json::to_string_pretty(&serde_json::json!({
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "AdmissionConfiguration",
            "plugins": [plugin("ValidatingAdmissionWebhook"), plugin("MutatingAdmissionWebhook")],
        }))?,
    )?;
    Ok(config)
}

async fn wait_for_etcd(port: u16, etcd: &mut Child, dir: &Path) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = etcd.try_wait()? {
            bail!(
                "etcd exited ({status}); last log lines:\n{}",
                tail(&dir.join("etcd.log"))
            );
        }
        if etcd_healthy(port).await {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "etcd was not healthy within 60 s; last log lines:\n{}",
                tail(&dir.join("etcd.log"))
            );
        }
        sleep(Duration::from_millis(100)).await;
    }
}

/// etcd's `/health` over plain HTTP/1.0: one request, no client library needed.
async fn etcd_healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    if stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .is_err()
    {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    response.contains("\"health\":\"true\"")
}

fn random_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("random bytes: {e}"))?;
    Ok(hex::encode(bytes))
}

fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, contents)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

fn log_file(dir: &Path, name: &str) -> anyhow::Result<std::fs::File> {
    Ok(std::fs::File::create(dir.join(name))?)
}

/// The last lines of a log file, for error messages.
pub fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
