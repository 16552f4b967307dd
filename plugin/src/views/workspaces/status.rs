//! `status`: the Workspaces of a namespace, or one in detail with what to do next.

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use providers_shared::api::Workspace;

use super::shown::{name_of, result_word, version};
use crate::{
    attempt_state::{State, next_steps::next_steps, state},
    objects::Fetched,
    on_delete::on_delete,
    output::{Rendered, list},
    table::{Fields, Table, col, or_dash, wide},
    views::{age, timestamp},
};

/// The Workspaces of a namespace (or every namespace, with a NAMESPACE column).
pub fn status_list(
    items: &[Fetched<Workspace>],
    all_namespaces: bool,
    namespace: &str,
    now: Timestamp,
) -> Rendered {
    let mut columns = Vec::new();
    if all_namespaces {
        columns.push(col("NAMESPACE"));
    }
    columns.extend([
        col("NAME"),
        col("RECIPE"),
        col("EDGE"),
        col("VERSION"),
        col("ATTEMPT"),
        col("PHASE"),
        wide("RESULT"),
        wide("OWNER"),
        wide("JOB"),
        col("AGE"),
    ]);
    let mut table = Table::new(&columns);
    for Fetched { typed: ws, .. } in items {
        let plan = ws.spec.plan.as_ref().map(|p| &p.plan);
        let status = ws.status.as_ref();
        let mut row = Vec::new();
        if all_namespaces {
            row.push(ws.namespace().unwrap_or_default());
        }
        row.extend([
            ws.name_any(),
            ws.spec.recipe.clone(),
            ws.spec.edge.clone(),
            version(ws),
            or_dash(plan.map(|p| p.attempt)),
            state(ws).label().to_owned(),
            result_word(status.and_then(|s| s.job_result)),
            or_dash(plan.map(|p| p.owner.username.clone())),
            or_dash(plan.map(|p| p.job.clone())),
            age(now, ws.metadata.creation_timestamp.as_ref()),
        ]);
        table.push(row);
    }
    Rendered {
        data: list(items.iter().map(|w| w.raw.clone()).collect()),
        table: table.render(false),
        wide: table.render(true),
        names: items.iter().map(|w| name_of(&w.typed)).collect(),
        empty: Some(if all_namespaces {
            "No workspaces found.".to_owned()
        } else {
            format!("No workspaces found in namespace {namespace}.")
        }),
        headers: true,
        rows_at: Some("items"),
    }
}

/// One Workspace: its attempt, job, result, conditions and what to do next.
pub fn status_detail(
    item: &Fetched<Workspace>,
    namespace_flag: Option<&str>,
    now: Timestamp,
) -> Rendered {
    let ws = &item.typed;
    let plan = ws.spec.plan.as_ref().map(|p| &p.plan);
    let status = ws.status.clone().unwrap_or_default();
    let current = state(ws);
    let mut fields = Fields::new();
    fields
        .add("Name", ws.name_any())
        .add("Namespace", ws.namespace().unwrap_or_default())
        .add("Recipe", ws.spec.recipe.clone())
        .add("Edge", ws.spec.edge.clone())
        .add("Version", version(ws))
        .add("Phase", current.label());
    match plan {
        Some(plan) => {
            fields
                .add(
                    "Attempt",
                    format!("{} (retry {})", plan.attempt, plan.retry),
                )
                .add("Owner", plan.owner.username.clone())
                .add("Job", plan.job.clone());
        }
        None => {
            fields.add("Attempt", "<not sealed>");
        }
    }
    // The result and finish time describe the current attempt only.
    let current_status = matches!(
        current,
        State::Succeeded { .. }
            | State::Failed { .. }
            | State::Running { .. }
            | State::Pending { .. }
    );
    fields
        .add(
            "Result",
            if current_status {
                result_word(status.job_result)
            } else {
                "-".to_owned()
            },
        )
        .add(
            "Finished",
            if current_status {
                timestamp(status.finished_at.as_ref())
            } else {
                "-".to_owned()
            },
        );
    fields.add(
        if ws.metadata.deletion_timestamp.is_some() {
            "Deletion"
        } else {
            "On delete"
        },
        on_delete(ws, &ws.name_any(), namespace_flag),
    );
    let mut text = fields.render();
    text.push_str("Conditions:\n");
    if status.conditions.is_empty() {
        text.push_str("  <none>\n");
    } else {
        let mut table = Table::new(&[
            col("TYPE"),
            col("STATUS"),
            col("REASON"),
            col("MESSAGE"),
            col("AGE"),
        ]);
        for condition in &status.conditions {
            table.push(vec![
                condition.type_.clone(),
                condition.status.clone(),
                condition.reason.clone(),
                condition.message.clone(),
                age(now, Some(&condition.last_transition_time)),
            ]);
        }
        text.push_str(&table.render_indented(false, "  "));
    }
    text.push_str("Next:\n");
    for step in next_steps(ws, &ws.name_any(), namespace_flag) {
        text.push_str(&format!("  {step}\n"));
    }
    Rendered::text(item.raw.clone(), text, vec![name_of(ws)])
}
