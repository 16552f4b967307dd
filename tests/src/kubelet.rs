//! The node side of the job runner: a Node object for the edge, the Pods a job controller
//! would make for each Job, their container status as a kubelet reports it, and the
//! kubelet's log endpoint, so the edge's API server serves `pods/log` for real.
//!
//! - **Node**: `<edge>-node`, with its InternalIP 127.0.0.1 and the port of this process's
//!   HTTPS log endpoint as the kubelet endpoint. The API server connects to it as to any
//!   kubelet (without `--kubelet-certificate-authority` it does not verify the certificate,
//!   which is why a self-signed one serves).
//! - **Pods**: `<job>-<suffix>`, from the Job's template, labelled with
//!   `batch.kubernetes.io/job-name` and `controller-uid` and owned by the Job, bound to the
//!   node. When the run ends its status is what a kubelet writes: the phase, and the
//!   container's terminated state with the exit code and, on failure, the termination
//!   message under `FallbackToLogsOnError` (the last 80 lines, at most 2048 bytes, of the log).
//! - **Logs**: `GET /containerLogs/<ns>/<pod>/<container>` with `tailLines` and
//!   `limitBytes`, as the API server proxies `pods/log` to a kubelet.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use anyhow::Context;
use k8s_openapi::{
    api::{batch::v1::Job, core::v1::Pod},
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::{
    Api, Client, ResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
    task::JoinHandle,
};
use tokio_rustls::TlsAcceptor;

/// Logs, by `namespace/pod`.
type Logs = Arc<Mutex<HashMap<String, String>>>;

/// The kubelet stand-in of one edge. Dropping it stops the log endpoint.
pub struct Kubelet {
    pub node: String,
    logs: Logs,
    server: JoinHandle<()>,
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Kubelet {
    /// Registers the node and serves its log endpoint.
    pub async fn start(edge: &str, admin: Client) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let logs: Logs = Arc::default();
        let server = tokio::spawn(serve(listener, tls()?, logs.clone()));
        let node = format!("{edge}-node");
        let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(admin.clone());
        let apply = PatchParams::apply("jobrunner").force();
        let object = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}});
        nodes
            .patch(&node, &apply, &Patch::Apply(&object))
            .await
            .context("registering the node")?;
        let status = json!({"status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "the job runner plays this node's kubelet",
                            "lastHeartbeatTime": Time(Timestamp::now()),
                            "lastTransitionTime": Time(Timestamp::now())}],
        }});
        nodes
            .patch_status(&node, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .context("the node's status")?;
        Ok(Self { node, logs, server })
    }

    /// The Pod a job controller makes for `job`, bound to this node; its name.
    pub async fn create_pod(&self, client: &Client, job: &Job) -> anyhow::Result<String> {
        let namespace = job.namespace().unwrap_or_default();
        let job_name = job.name_any();
        let job_uid = job.uid().unwrap_or_default();
        let template = job
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .context("the Job has no template")?;
        let mut metadata = template.metadata.unwrap_or_default();
        let labels = metadata.labels.get_or_insert_default();
        for (key, value) in [
            ("batch.kubernetes.io/job-name", &job_name),
            ("job-name", &job_name),
            ("batch.kubernetes.io/controller-uid", &job_uid),
            ("controller-uid", &job_uid),
        ] {
            labels.insert(key.to_owned(), value.clone());
        }
        let suffix = &job_uid[..job_uid.len().min(5)];
        metadata.name = Some(format!("{job_name}-{suffix}"));
        metadata.namespace = Some(namespace.clone());
        metadata.owner_references = Some(vec![serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": job_uid,
            "controller": true, "blockOwnerDeletion": true,
        }))?]);
        let mut spec = template.spec.context("the Job's template has no spec")?;
        spec.node_name = Some(self.node.clone());
        let pod = Pod {
            metadata,
            spec: Some(spec),
            ..Default::default()
        };
        let name = pod.name_any();
        // Tried again after a lost answer: the first try may have made it.
        match Api::<Pod>::namespaced(client.clone(), &namespace)
            .create(&PostParams::default(), &pod)
            .await
        {
            Ok(created) => Ok(created.name_any()),
            Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(name),
            Err(error) => Err(error).context("creating the runner Pod"),
        }
    }

    /// What a kubelet reports when the container ended: the phase, the terminated state,
    /// and on failure the end of the log as the termination message.
    pub async fn finish_pod(
        &self,
        client: &Client,
        namespace: &str,
        pod: &str,
        exit: i32,
        output: &str,
        started: Timestamp,
    ) -> anyhow::Result<()> {
        self.logs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(format!("{namespace}/{pod}"), output.to_owned());
        let mut terminated = json!({
            "exitCode": exit,
            "reason": if exit == 0 { "Completed" } else { "Error" },
            "startedAt": Time(started),
            "finishedAt": Time(Timestamp::now()),
        });
        if exit != 0 {
            terminated["message"] = json!(fallback_message(output));
        }
        let status = json!({"status": {
            "phase": if exit == 0 { "Succeeded" } else { "Failed" },
            "containerStatuses": [{
                "name": "helm", "ready": false, "restartCount": 0,
                "image": "helm", "imageID": "", "started": false,
                "state": {"terminated": terminated},
            }],
        }});
        Api::<Pod>::namespaced(client.clone(), namespace)
            .patch_status(pod, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .context("the runner Pod's status")?;
        Ok(())
    }
}

/// The termination message under `FallbackToLogsOnError`: the last 80 lines of the log, at
/// most 2048 bytes.
fn fallback_message(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let tail = lines[lines.len().saturating_sub(80)..].join("\n");
    if tail.len() <= 2048 {
        return tail;
    }
    let mut start = tail.len() - 2048;
    while !tail.is_char_boundary(start) {
        start += 1;
    }
    tail[start..].to_owned()
}

/// A self-signed serving certificate for 127.0.0.1.
fn tls() -> anyhow::Result<TlsAcceptor> {
    let key = rcgen::KeyPair::generate()?;
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])?;
    let cert = params.self_signed(&key)?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(
        vec![CertificateDer::from(cert.der().to_vec())],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

async fn serve(listener: TcpListener, tls: TlsAcceptor, logs: Logs) {
    while let Ok((tcp, _)) = listener.accept().await {
        let (tls, logs) = (tls.clone(), logs.clone());
        tokio::spawn(async move {
            let Ok(mut stream) = tls.accept(tcp).await else {
                return;
            };
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head);
            let target = head.split_whitespace().nth(1).unwrap_or_default();
            let (status, body) = match answer(target, &logs) {
                Some(body) => ("200 OK", body),
                None => ("404 Not Found", "no such container log\n".to_owned()),
            };
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

/// The log a `/containerLogs/<ns>/<pod>/<container>?tailLines=N&limitBytes=M` asks for.
fn answer(target: &str, logs: &Logs) -> Option<String> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut parts = path.strip_prefix("/containerLogs/")?.split('/');
    let (namespace, pod) = (parts.next()?, parts.next()?);
    let log = logs
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&format!("{namespace}/{pod}"))
        .cloned()?;
    let param = |name: &str| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse::<usize>().ok())
    };
    let mut text = log;
    if let Some(tail) = param("tailLines") {
        let lines: Vec<&str> = text.lines().collect();
        text = lines[lines.len().saturating_sub(tail)..].join("\n");
    }
    if let Some(limit) = param("limitBytes")
        && text.len() > limit
    {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    Some(text)
}
