//! The runner's log, fetched from the edge through the installer's edge credential and kept
//! on the hub for tenants, who never get edge access: a ConfigMap `provider-logs-<workspace>`
//! in the organization's namespace, owned by the Workspace, one key per attempt
//! (`attempt-<N>.log`), the last `--runner-log-history` attempts, each at most
//! [`LOG_LIMIT`] bytes (the end of the log). `kubectl provider logs` reads it.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::{
    Api, Client,
    api::{LogParams, Patch, PatchParams, PostParams},
};
use providers::{
    api::{GROUP, VERSION, Workspace},
    installer::{RunnerLog, names},
};
use serde_json::{Value, json};

use super::context::Context;

/// The most of a runner's log kept per attempt.
pub const LOG_LIMIT: i64 = 64 * 1024;
/// The last lines of a runner's log that are read.
const TAIL_LINES: i64 = 1000;

/// The ConfigMap that keeps a Workspace's runner logs.
pub fn config_map_name(workspace: &str) -> String {
    let head: String = workspace.chars().take(230).collect();
    format!("provider-logs-{head}")
}

/// Fetches the log and keeps it; failures are logged, never returned: a log is a help for
/// people, and nothing of the attempt waits for it.
pub async fn keep(ctx: &Context, edge: Option<&Client>, workspace: &Workspace, log: &RunnerLog) {
    let Some(edge) = edge else {
        tracing::warn!(pod = %log.pod, "no edge client: the runner's log is not kept");
        return;
    };
    let text = match fetch(edge, log).await {
        Ok(text) => text,
        Err(error) => {
            tracing::warn!(pod = %log.pod, %error, "cannot read the runner's log");
            return;
        }
    };
    if let Err(error) = store(ctx, workspace, log.attempt, &text).await {
        tracing::warn!(pod = %log.pod, %error, "cannot keep the runner's log on the hub");
    }
}

async fn fetch(edge: &Client, log: &RunnerLog) -> Result<String, kube::Error> {
    let pods: Api<Pod> = Api::namespaced(edge.clone(), &log.namespace);
    // The end of the log is where helm says what went wrong: the last lines, capped.
    let params = LogParams {
        container: Some("helm".into()),
        tail_lines: Some(TAIL_LINES),
        limit_bytes: Some(LOG_LIMIT),
        ..Default::default()
    };
    pods.logs(&log.pod, &params).await
}

async fn store(
    ctx: &Context,
    workspace: &Workspace,
    attempt: i64,
    text: &str,
) -> Result<(), kube::Error> {
    let namespace = workspace.metadata.namespace.clone().unwrap_or_default();
    let name = workspace.metadata.name.clone().unwrap_or_default();
    let uid = workspace.metadata.uid.clone().unwrap_or_default();
    let api: Api<ConfigMap> = Api::namespaced(ctx.hub.clone(), &namespace);
    let config_map = config_map_name(&name);
    // The newest attempts only: older keys are removed in the same write.
    let keep = i64::try_from(ctx.args.runner_log_history.max(1)).unwrap_or(i64::MAX);
    let mut data = serde_json::Map::new();
    data.insert(
        format!("attempt-{attempt}.log"),
        Value::String(text.to_owned()),
    );
    for old in (attempt - keep - 4).max(1)..=(attempt - keep) {
        data.insert(format!("attempt-{old}.log"), Value::Null);
    }
    let patch = json!({"data": data});
    match api
        .patch(&config_map, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Err(kube::Error::Api(status)) if status.is_not_found() => {}
        other => return other.map(|_| ()),
    }
    let created: ConfigMap = serde_json::from_value(json!({
        "metadata": {
            "name": config_map,
            "namespace": namespace,
            "labels": {
                names::LABEL_MANAGED_BY: names::MANAGED_BY,
                names::LABEL_WORKSPACE_UID: uid,
            },
            "ownerReferences": [{
                "apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Workspace",
                "name": name, "uid": uid, "controller": true,
            }],
        },
        "data": {format!("attempt-{attempt}.log"): text},
    }))
    .map_err(kube::Error::SerdeError)?;
    match api.create(&PostParams::default(), &created).await {
        // Made meanwhile by another pass: write into it.
        Err(kube::Error::Api(status)) if status.is_already_exists() => api
            .patch(&config_map, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ()),
        other => other.map(|_| ()),
    }
}
