//! `history`: every attempt of a Workspace.

use kube::ResourceExt;
use providers_shared::api::{Cause, Workspace};
use serde_json::json;

use super::shown::{name_of, result_word};
use crate::{
    attempt_state::state,
    objects::Fetched,
    output::Rendered,
    table::{Table, col, wide},
    views::timestamp,
};

/// Why an attempt ran, in the CAUSE column: `Rollback to 2` names the attempt it restored.
fn cause_word(cause: Option<Cause>, restores: Option<i64>) -> String {
    match (cause, restores) {
        (Some(Cause::Rollback), Some(to)) => format!("Rollback to {to}"),
        (Some(cause), _) => format!("{cause:?}"),
        (None, _) => "-".to_owned(),
    }
}

/// Every attempt, oldest first, with the sealed attempt the installer has not reported on yet.
pub fn history(item: &Fetched<Workspace>) -> Rendered {
    let ws = &item.typed;
    let status = ws.status.clone().unwrap_or_default();
    let mut table = Table::new(&[
        col("ATTEMPT"),
        col("CAUSE"),
        col("VERSION"),
        col("OWNER"),
        col("JOB"),
        col("RESULT"),
        col("FINISHED"),
        wide("ATTEMPT ID"),
        wide("ROLLBACK"),
        col("MESSAGE"),
    ]);
    let mut attempts: Vec<serde_json::Value> = Vec::new();
    for attempt in &status.attempts {
        table.push(vec![
            attempt.attempt.to_string(),
            cause_word(attempt.cause, attempt.restores),
            attempt.version.clone(),
            attempt.owner.clone(),
            attempt.job.clone(),
            result_word(attempt.result),
            timestamp(attempt.finished_at.as_ref()),
            attempt.attempt_id.clone(),
            if attempt.kept.is_some() {
                "possible"
            } else {
                "-"
            }
            .to_owned(),
            attempt.message.clone().unwrap_or_default(),
        ]);
        attempts.push(serde_json::to_value(attempt).unwrap_or_default());
    }
    if let Some(plan) = ws.spec.plan.as_ref().map(|p| &p.plan)
        && !status.attempts.iter().any(|a| a.attempt == plan.attempt)
    {
        let label = state(ws).label();
        table.push(vec![
            plan.attempt.to_string(),
            cause_word(plan.cause, plan.restores),
            plan.version.clone(),
            plan.owner.username.clone(),
            plan.job.clone(),
            "-".to_owned(),
            "-".to_owned(),
            plan.attempt_id.clone(),
            "-".to_owned(),
            format!("{label}: not reported by the installer yet"),
        ]);
        attempts.push(json!({
            "attempt": plan.attempt, "attemptID": plan.attempt_id, "version": plan.version,
            "owner": plan.owner.username, "job": plan.job,
        }));
    }
    let empty = format!("{} has no attempts yet.", ws.name_any());
    Rendered {
        data: json!({
            "workspace": { "namespace": ws.namespace(), "name": ws.name_any() },
            "attempts": attempts,
        }),
        table: table.render(false),
        wide: table.render(true),
        names: vec![name_of(ws)],
        empty: Some(empty),
        headers: true,
        rows_at: Some("attempts"),
    }
}
