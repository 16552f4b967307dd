//! The real `providers-webhook serve` process, with real TLS, registered on a control plane.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use anyhow::{Context, bail};
use kube::{Api, api::PostParams};
use providers_shared::api::{Workspace, WorkspaceSpec};

use crate::{
    binaries, controlplane::ControlPlaneInfo, kubeconfig, kubectl, pki::Authority, platform,
    ports::free_port, users::User,
};

/// The namespace of the platform's own objects (defined with the control plane, which
/// onboards the organizations with the installer's account there).
pub use crate::controlplane::SYSTEM_NAMESPACE;

/// The ConfigMap that publishes the sealing public keys.
pub const KEYS_CONFIGMAP: &str = "providers-sealing-keys";

/// A running webhook. Dropping it kills the process.
pub struct Webhook {
    child: Option<Child>,
    pub port: u16,
    /// The plain-HTTP port of /healthz, /readyz and /metrics.
    pub admin_port: u16,
    pub dir: tempfile::TempDir,
    /// The CA that signed the serving certificate: the webhook configurations' caBundle.
    pub ca_pem: String,
    /// That CA, to issue the next serving certificate (a renewal).
    pub ca: Authority,
    /// The sealing key's ID and public key.
    pub key_id: String,
    pub public_key_pem: String,
    args: Vec<String>,
}

impl Webhook {
    /// Starts the webhook for `plane` as its least-privilege ServiceAccount (the RBAC in
    /// manifests/webhook/rbac.yaml, a token from the TokenRequest API), accepting charts
    /// from `allowed_repositories`, and publishes its public key.
    pub fn start(plane: &ControlPlaneInfo, allowed_repositories: &[&str]) -> anyhow::Result<Self> {
        let mut webhook = Self::prepare(plane, allowed_repositories)?;
        webhook.spawn()?;
        Ok(webhook)
    }

    /// Everything [`Self::start`] does but start the process: the files, the identity, the
    /// published key and the flags, for [`Self::replica`]s to share.
    pub fn prepare(
        plane: &ControlPlaneInfo,
        allowed_repositories: &[&str],
    ) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("providers-webhook-")
            .tempdir()?;
        let bin = binaries::cargo_bin("providers-webhook")?;
        let admin = plane.kubeconfig(User::Admin);

        let ca = Authority::generate("webhook-ca")?;
        let serving = ca.issue_serving(
            "providers-webhook",
            &["providers-webhook.providers-system.svc"],
        )?;
        let cert = dir.path().join("tls.crt");
        let key = dir.path().join("tls.key");
        std::fs::write(&cert, &serving.cert_pem)?;
        std::fs::write(&key, &serving.key_pem)?;

        let private_key = dir.path().join("sealing.pem");
        let public_key = dir.path().join("sealing.pub");
        let keygen = Command::new(&bin)
            .arg("keygen")
            .arg("--private-key")
            .arg(&private_key)
            .arg("--public-key")
            .arg(&public_key)
            .output()?;
        if !keygen.status.success() {
            bail!("keygen failed: {}", String::from_utf8_lossy(&keygen.stderr));
        }
        let key_id = String::from_utf8(keygen.stdout)?.trim().to_owned();
        let public_key_pem = std::fs::read_to_string(&public_key)?;

        let root = binaries::workspace_root()?;
        kubectl::ok(
            admin,
            &[
                "apply",
                "--server-side",
                "--field-manager=platform",
                "-f",
                root.join("manifests/namespace/namespace.yaml")
                    .to_str()
                    .context("path")?,
            ],
        )?;
        kubectl::ok(
            admin,
            &[
                "apply",
                "--server-side",
                "--field-manager=platform",
                "-f",
                root.join("manifests/webhook/rbac.yaml")
                    .to_str()
                    .context("path")?,
            ],
        )?;
        let token = kubectl::ok(
            admin,
            &[
                "create",
                "token",
                "providers-webhook",
                "-n",
                SYSTEM_NAMESPACE,
                "--duration=24h",
            ],
        )?;
        let webhook_kubeconfig = dir.path().join("webhook.kubeconfig");
        kubeconfig::write(
            &webhook_kubeconfig,
            &plane.name,
            &plane.server,
            &plane.ca_pem()?,
            "providers-webhook",
            token.trim(),
            None,
        )?;

        publish_keys(plane, &key_id, &public_key_pem)?;

        let port = free_port()?;
        let admin_port = free_port()?;
        let mut args = vec![
            "serve".to_owned(),
            "--listen".to_owned(),
            format!("127.0.0.1:{port}"),
            "--admin-listen".to_owned(),
            format!("127.0.0.1:{admin_port}"),
            "--tls-cert".to_owned(),
            path(&cert),
            "--tls-key".to_owned(),
            path(&key),
            "--sealing-key".to_owned(),
            path(&private_key),
            "--kubeconfig".to_owned(),
            path(&webhook_kubeconfig),
            "--client-ca".to_owned(),
            path(&plane.webhook_client_ca_file),
            "--allowed-client".to_owned(),
            crate::controlplane::WEBHOOK_CLIENT_NAME.to_owned(),
            // The system tests run the installer's PlanValues sweep with a grace of 5 s:
            // the window of seals without a mark stays well under it (ADR 46).
            "--plan-values-mark-window".to_owned(),
            "1".to_owned(),
        ];
        for repository in allowed_repositories {
            args.push("--allowed-chart-repository".to_owned());
            args.push((*repository).to_owned());
        }
        Ok(Self {
            child: None,
            port,
            admin_port,
            ca_pem: ca.cert_pem.clone(),
            ca,
            key_id,
            public_key_pem,
            dir,
            args,
        })
    }

    /// A replica of this webhook on ports of its own, sharing its certificate, keys,
    /// identity and flags as a Deployment's Pods share their Secrets; `overrides` replace
    /// flags' values (`("--tls-cert", path)`). It is not supervised, so it can be stopped
    /// with SIGTERM as the kubelet stops a Pod; dropping it kills it.
    pub fn replica(&self, overrides: &[(&str, String)]) -> anyhow::Result<WebhookReplica> {
        let (port, admin_port) = (free_port()?, free_port()?);
        let mut args = self.args.clone();
        let mut set = |flag: &str, value: String| {
            match args.iter().position(|a| a == flag) {
                Some(i) => args[i + 1] = value,
                None => args.extend([flag.to_owned(), value]),
            };
        };
        set("--listen", format!("127.0.0.1:{port}"));
        set("--admin-listen", format!("127.0.0.1:{admin_port}"));
        for (flag, value) in overrides {
            set(flag, value.clone());
        }
        let log = self.dir.path().join(format!("replica-{port}.log"));
        let child = Command::new(binaries::cargo_bin("providers-webhook")?)
            .args(&args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()?;
        Ok(WebhookReplica {
            child: Some(child),
            addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            admin_port,
            log,
        })
    }

    /// The log file of the process.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("webhook.log")
    }

    /// Drops `flag` and its value from the flags the process is started with, so that it
    /// runs with the flag's default.
    pub fn without_flag(&mut self, flag: &str) {
        if let Some(i) = self.args.iter().position(|a| a == flag) {
            self.args.drain(i..(i + 2).min(self.args.len()));
        }
    }

    /// (Re)starts the process with the same arguments and waits until it accepts connections.
    pub fn spawn(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        // Under a supervisor that stops the webhook when this process's end closes the
        // pipe: a Webhook kept in a `static` is never dropped.
        let child = Command::new(binaries::cargo_bin("providers-controlplane")?)
            .arg("supervise")
            .arg(binaries::cargo_bin("providers-webhook")?)
            .args(&self.args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        self.child = Some(child);
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                bail!(
                    "the webhook exited ({status}):\n{}",
                    crate::controlplane::tail(&self.log_path())
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!(
            "the webhook did not listen within 10 s:\n{}",
            crate::controlplane::tail(&self.log_path())
        )
    }

    /// Stops the webhook and waits until it is gone: closing the supervisor's stdin makes
    /// it kill the webhook and exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }

    /// Registers the shipped webhook configurations (manifests/webhook/) on `plane`, with the
    /// service reference replaced by this process's URL and caBundle, and waits until the
    /// API server calls the webhook.
    pub async fn register(&self, plane: &ControlPlaneInfo) -> anyhow::Result<()> {
        register_configurations(plane, self.port, &self.ca_pem)?;
        self.wait_until_called(plane).await
    }

    /// Polls with a dry-run create that only this webhook can deny with "does not exist"
    /// until the API server's webhook informer has the configuration.
    pub async fn wait_until_called(&self, plane: &ControlPlaneInfo) -> anyhow::Result<()> {
        let api: Api<Workspace> =
            Api::namespaced(plane.client(User::Admin).await?, SYSTEM_NAMESPACE);
        let probe = Workspace::new(
            "webhook-probe",
            WorkspaceSpec {
                recipe: "webhook-probe-no-such-recipe".into(),
                edge: "none".into(),
                version: None,
                values: None,
                retry: None,
                plan: None,
            },
        );
        let params = PostParams {
            dry_run: true,
            ..Default::default()
        };
        for _ in 0..100 {
            match api.create(&params, &probe).await {
                Err(kube::Error::Api(status)) if status.message.contains("does not exist") => {
                    return Ok(());
                }
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        bail!(
            "the API server did not call the webhook within 10 s:\n{}",
            crate::controlplane::tail(&self.log_path())
        )
    }

    /// Removes the webhook configurations from `plane`.
    pub fn unregister(plane: &ControlPlaneInfo) -> anyhow::Result<()> {
        let admin = plane.kubeconfig(User::Admin);
        kubectl::ok(
            admin,
            &[
                "delete",
                "mutatingwebhookconfiguration,validatingwebhookconfiguration",
                "providers-webhook",
                "--ignore-not-found",
            ],
        )?;
        Ok(())
    }

    /// Restarts the process as a rolled-out Deployment starts its new Pod (step 2 of
    /// "Rotating the sealing key"): with `private_key` as its sealing key (the Secret
    /// `providers-sealing-key`, changed) and `published`, `(entry, PEM)` pairs, in the
    /// folder of `--public-keys-dir` (the ConfigMap `providers-sealing-keys` as the kubelet
    /// mounts it in the Pod). Waits until it listens; `key_id` and `public_key_pem` become
    /// the new key's.
    pub fn restart_with_sealing_key(
        &mut self,
        private_key: &std::path::Path,
        published: &[(String, String)],
    ) -> anyhow::Result<()> {
        let pem = std::fs::read_to_string(private_key)?;
        let sealer = providers_shared::seal::Sealer::from_pkcs8_pem(&pem)?;
        // A new folder each time, as the kubelet swaps a ConfigMap volume's content whole.
        let keys_dir = tempfile::Builder::new()
            .prefix("public-keys-")
            .tempdir_in(self.dir.path())?
            .keep();
        for (entry, pem) in published {
            std::fs::write(keys_dir.join(entry), pem)?;
        }
        let sealing_key = self.dir.path().join("sealing.pem");
        self.stop();
        std::fs::write(&sealing_key, &pem)?;
        match self.args.iter().position(|a| a == "--public-keys-dir") {
            Some(at) => self.args[at + 1] = path(&keys_dir),
            None => self
                .args
                .extend(["--public-keys-dir".to_owned(), path(&keys_dir)]),
        }
        self.key_id = sealer.key_id().to_owned();
        self.public_key_pem = sealer.public_key_pem();
        self.spawn()
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Applies the shipped webhook configurations (manifests/webhook/) to `plane` with the
/// service reference replaced by `https://127.0.0.1:{port}` and `ca_pem` as the caBundle:
/// the same rules and matchConditions for whichever server listens there. It does not wait
/// for the API server to pick them up.
pub fn register_configurations(
    plane: &ControlPlaneInfo,
    port: u16,
    ca_pem: &str,
) -> anyhow::Result<()> {
    let root = binaries::workspace_root()?;
    let text = std::fs::read_to_string(root.join("manifests/webhook/webhook-configurations.yaml"))?;
    let ca_bundle = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, ca_pem);
    let mut documents = Vec::new();
    for document in serde_norway::Deserializer::from_str(&text) {
        let mut value: serde_json::Value = serde::Deserialize::deserialize(document)?;
        if let Some(annotations) = value
            .pointer_mut("/metadata/annotations")
            .and_then(|a| a.as_object_mut())
        {
            annotations.remove("cert-manager.io/inject-ca-from");
        }
        for webhook in value["webhooks"].as_array_mut().context("webhooks")? {
            let path = webhook
                .pointer("/clientConfig/service/path")
                .and_then(|p| p.as_str())
                .context("path")?;
            webhook["clientConfig"] = serde_json::json!({ "url": format!("https://127.0.0.1:{port}{path}"), "caBundle": ca_bundle });
        }
        documents.push(serde_norway::to_string(&value)?);
    }
    platform::apply_yaml(plane.kubeconfig(User::Admin), &documents.join("---\n"))
}

/// Publishes a public key in the keys ConfigMap (entry `<keyID>.pem`).
pub fn publish_keys(
    plane: &ControlPlaneInfo,
    key_id: &str,
    public_key_pem: &str,
) -> anyhow::Result<()> {
    let config_map = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": KEYS_CONFIGMAP, "namespace": SYSTEM_NAMESPACE},
        "data": { format!("{key_id}.pem"): public_key_pem },
    });
    platform::apply_yaml(
        plane.kubeconfig(User::Admin),
        &serde_norway::to_string(&config_map)?,
    )
}

fn path(p: &std::path::Path) -> String {
    p.display().to_string()
}

/// A webhook process of [`Webhook::replica`]. Dropping it kills it.
pub struct WebhookReplica {
    child: Option<Child>,
    /// Its HTTPS address: the endpoint a Service would route to.
    pub addr: std::net::SocketAddr,
    pub admin_port: u16,
    pub log: PathBuf,
}

impl WebhookReplica {
    /// Waits until `/readyz` answers 200, as a readiness probe does before the replica
    /// joins the endpoints.
    pub async fn ready(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self
                .readyz()
                .await
                .is_ok_and(|a| a.lines().next().is_some_and(|l| l.contains(" 200 ")))
            {
                return Ok(());
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                bail!(
                    "the webhook replica exited ({status}):\n{}",
                    crate::controlplane::tail(&self.log)
                );
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "the webhook replica was not ready within {timeout:?}:\n{}",
                    crate::controlplane::tail(&self.log)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Its `/readyz` answer, status line and body.
    pub async fn readyz(&self) -> anyhow::Result<String> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.admin_port)).await?;
        stream
            .write_all(b"GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await?;
        Ok(text)
    }

    /// Sends SIGTERM, as the kubelet does when a Pod is deleted.
    pub fn terminate(&self) -> anyhow::Result<()> {
        let child = self.child.as_ref().context("the replica is not running")?;
        crate::process::signal(child.id(), "TERM")
    }

    /// Waits up to `timeout` for the process to exit; its exit status.
    pub async fn exited(&mut self, timeout: Duration) -> anyhow::Result<std::process::ExitStatus> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return Ok(status);
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "the webhook replica did not exit within {timeout:?}:\n{}",
                    crate::controlplane::tail(&self.log)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for WebhookReplica {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
