//! `target`: where a Workspace installs.

use providers_shared::api::Workspace;
use serde_json::json;

use super::shown::name_of;
use crate::{
    objects::Fetched,
    output::Rendered,
    table::{Table, col, wide},
};

/// Where the current attempt installs, from its sealed plan.
pub fn target(item: &Fetched<Workspace>) -> Rendered {
    let ws = &item.typed;
    let plan = ws.spec.plan.as_ref().map(|p| &p.plan);
    let mut table = Table::new(&[
        col("EDGE"),
        col("CLUSTER"),
        col("NAMESPACE"),
        col("RELEASE"),
        wide("EDGE WORKSPACE"),
        wide("ATTEMPT"),
        wide("JOB"),
    ]);
    let unsealed = "<not sealed>".to_owned();
    table.push(match plan {
        Some(plan) => vec![
            plan.edge_name.clone(),
            plan.cluster.clone(),
            plan.namespace.clone(),
            plan.release.clone(),
            plan.edge_workspace_uuid.clone(),
            plan.attempt.to_string(),
            plan.job.clone(),
        ],
        None => vec![
            ws.spec.edge.clone(),
            unsealed.clone(),
            unsealed.clone(),
            unsealed.clone(),
            unsealed.clone(),
            "-".to_owned(),
            "-".to_owned(),
        ],
    });
    let data = match plan {
        Some(plan) => json!({
            "sealed": true,
            "edge": plan.edge_name, "cluster": plan.cluster, "namespace": plan.namespace,
            "release": plan.release, "edgeWorkspaceUUID": plan.edge_workspace_uuid,
            "attempt": plan.attempt, "job": plan.job,
        }),
        None => json!({ "sealed": false, "edge": ws.spec.edge }),
    };
    Rendered {
        data,
        table: table.render(false),
        wide: table.render(true),
        names: vec![name_of(ws)],
        empty: None,
        headers: true,
        rows_at: None,
    }
}
