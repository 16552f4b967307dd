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
use providers_shared::{
    api::{GROUP, VERSION, Workspace},
    installer::{RunnerLog, names},
    text,
};
use serde_json::{Value, json};

/// The most of a runner's log kept per attempt.
pub const LOG_LIMIT: i64 = 64 * 1024;
/// The last lines of a runner's log that are read.
const TAIL_LINES: i64 = 1000;

/// Fetches the log and keeps it; failures are logged, never returned: a log is a help for
/// people, and nothing of the attempt waits for it.
///
/// The log goes to the Workspace's ConfigMap on `hub`, which keeps the logs of the newest
/// `history` attempts.
pub async fn keep(
    hub: &Client,
    history: usize,
    edge: Option<&Client>,
    workspace: &Workspace,
    log: &RunnerLog,
) {
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
    if let Err(error) = store(hub, history, workspace, log.attempt, &text).await {
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
    providers_edge_watch::grants::with_grant(
        edge,
        &log.namespace,
        providers_edge_watch::grants::RUNNER_LOGS,
        || pods.logs(&log.pod, &params),
    )
    .await
}

async fn store(
    hub: &Client,
    history: usize,
    workspace: &Workspace,
    attempt: i64,
    text: &str,
) -> Result<(), kube::Error> {
    let namespace = workspace.metadata.namespace.clone().unwrap_or_default();
    let name = workspace.metadata.name.clone().unwrap_or_default();
    let uid = workspace.metadata.uid.clone().unwrap_or_default();
    let api: Api<ConfigMap> = Api::namespaced(hub.clone(), &namespace);
    let config_map = names::runner_logs(&name);
    // Whatever a chart printed, tenant values included, is kept only as plain text.
    let text = text::for_terminal(text);
    let key = format!("attempt-{attempt}.log");
    // Written only into this Workspace's ConfigMap: the patch tests the owner label first,
    // so the installer needs no right to read ConfigMaps in the organization's namespace.
    let owned = json!({"op": "test", "path": OWNER_LABEL_POINTER, "value": uid});
    let add = json!([owned, {"op": "add", "path": format!("/data/{key}"), "value": text}]);
    let written = match api
        .patch(&config_map, &PatchParams::default(), &json_patch(add)?)
        .await
    {
        Ok(written) => written,
        Err(kube::Error::Api(status)) if status.is_not_found() => {
            return create(&api, &config_map, workspace, &key, text).await;
        }
        Err(kube::Error::Api(status)) if status.code == 422 => {
            tracing::warn!(
                config_map = %format!("{namespace}/{config_map}"),
                "a ConfigMap under the runner logs' name is not this Workspace's: the log is not kept"
            );
            return Ok(());
        }
        Err(error) => return Err(error),
    };
    // The newest attempts only: older keys are removed, guarded the same way.
    let stale = stale_attempts(&written, history.max(1));
    if stale.is_empty() {
        return Ok(());
    }
    let mut prune = vec![json!({"op": "test", "path": OWNER_LABEL_POINTER, "value": uid})];
    prune.extend(
        stale
            .iter()
            .map(|old| json!({"op": "remove", "path": format!("/data/attempt-{old}.log")})),
    );
    api.patch(
        &config_map,
        &PatchParams::default(),
        &json_patch(json!(prune))?,
    )
    .await
    .map(|_| ())
}

/// The JSON pointer of the Workspace UID label ('/' in the key escaped as `~1`).
const OWNER_LABEL_POINTER: &str = "/metadata/labels/providers.platform.dev~1workspace-uid";

fn json_patch(ops: Value) -> Result<Patch<()>, kube::Error> {
    let patch: json_patch::Patch = serde_json::from_value(ops).map_err(kube::Error::SerdeError)?;
    Ok(Patch::Json(patch))
}

/// The attempts kept in `config_map` beyond the newest `keep`.
fn stale_attempts(config_map: &ConfigMap, keep: usize) -> Vec<i64> {
    let mut attempts: Vec<i64> = config_map
        .data
        .iter()
        .flatten()
        .filter_map(|(k, _)| {
            k.strip_prefix("attempt-")?
                .strip_suffix(".log")?
                .parse()
                .ok()
        })
        .collect();
    attempts.sort_unstable_by(|a, b| b.cmp(a));
    attempts.into_iter().skip(keep).collect()
}

async fn create(
    api: &Api<ConfigMap>,
    config_map: &str,
    workspace: &Workspace,
    key: &str,
    text: String,
) -> Result<(), kube::Error> {
    let namespace = workspace.metadata.namespace.clone().unwrap_or_default();
    let name = workspace.metadata.name.clone().unwrap_or_default();
    let uid = workspace.metadata.uid.clone().unwrap_or_default();
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
        "data": {key: text},
    }))
    .map_err(kube::Error::SerdeError)?;
    api.create(&PostParams::default(), &created)
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_pointer_names_the_workspace_uid_label() {
        let unescaped = OWNER_LABEL_POINTER
            .strip_prefix("/metadata/labels/")
            .unwrap()
            .replace("~1", "/");
        assert_eq!(unescaped, names::LABEL_WORKSPACE_UID);
    }

    #[test]
    fn only_the_newest_attempts_are_kept() {
        let config_map: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "x"},
            "data": {
                "attempt-1.log": "", "attempt-2.log": "", "attempt-10.log": "",
                "attempt-9.log": "", "unrelated": "",
            },
        }))
        .unwrap();
        assert_eq!(stale_attempts(&config_map, 2), vec![2, 1]);
        assert!(stale_attempts(&config_map, 5).is_empty());
    }
}
