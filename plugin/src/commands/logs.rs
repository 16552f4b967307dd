//! `logs NAME [--attempt N]`: the runner's log of a failed attempt. Tenants cannot see the
//! edge; the installer fetched the log through its edge credential and keeps it on the hub
//! (ConfigMap `provider-logs-<workspace>` in the Workspace's namespace, one key per
//! attempt).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use providers_shared::{api::Workspace, installer::names, text};

use crate::{cli::LogsArgs, commands::Ctx, objects, output::Rendered, report::user_error};

pub async fn run(ctx: &Ctx, args: LogsArgs) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let namespace = &ctx.conn.namespace;
    let item = objects::get::<Workspace>(client, Some(namespace), &args.name).await?;
    let config_map = names::runner_logs(&args.name);
    let uid = item.typed.metadata.uid.clone().unwrap_or_default();
    // Only the installer's ConfigMap for this very Workspace (by its UID label): anyone who
    // may write ConfigMaps in the namespace could make one under that name.
    let logs = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get_opt(&config_map)
        .await?
        .filter(|c| {
            c.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(names::LABEL_WORKSPACE_UID))
                == Some(&uid)
        })
        .and_then(|c| c.data)
        .unwrap_or_default();
    let attempt = match args.attempt {
        Some(attempt) => attempt,
        None => logs
            .keys()
            .filter_map(|k| k.strip_prefix("attempt-")?.strip_suffix(".log")?.parse::<i64>().ok())
            .max()
            .ok_or_else(|| {
                user_error(
                    format!("no runner log is kept for {}", args.name),
                    Some(
                        "the installer keeps the runner's log of failed attempts; kubectl provider history shows each attempt's result".to_owned(),
                    ),
                )
            })?,
    };
    let Some(text) = logs.get(&format!("attempt-{attempt}.log")) else {
        let known = item
            .typed
            .status
            .as_ref()
            .and_then(|s| s.attempts.iter().find(|r| r.attempt == attempt))
            .map(|r| match r.result {
                Some(result) => format!("{result:?}"),
                None => "no result yet".to_owned(),
            })
            .unwrap_or_else(|| "not recorded".to_owned());
        return Err(user_error(
            format!(
                "no runner log is kept for attempt {attempt} of {} (its result: {known})",
                args.name
            ),
            Some(
                "the installer keeps the runner's log of the last failed attempts only".to_owned(),
            ),
        ));
    };
    // A chart's output carries tenant values: only plain text reaches the terminal.
    let text = text::for_terminal(text);
    let mut shown = text.clone();
    if !shown.ends_with('\n') {
        shown.push('\n');
    }
    ctx.print(&Rendered::text(
        serde_json::json!({"attempt": attempt, "log": text}),
        shown,
        vec![format!("configmap/{config_map}")],
    ))
}
