//! `kubectl provider edges`: each edge, whether you may install onto it, and which
//! installer replica works it.

use kube::{Resource, ResourceExt};
use providers_shared::api::Edge;
use serde_json::json;

pub use crate::access::Access;
use crate::{
    objects::Fetched,
    output::{Rendered, resource_name},
    table::{Table, col, wide},
};

/// The edges with the caller's install permission on each. YAML and JSON give
/// `{edges: [{edge: <Edge>, install: {allowed, reason}}]}`: the permission is not part of
/// the Edge object, so it sits beside it.
pub fn edge_list(edges: &[(Fetched<Edge>, Access)]) -> Rendered {
    let mut table = Table::new(&[
        col("NAME"),
        col("CLUSTER"),
        col("READY"),
        col("INSTALL"),
        col("INSTALLER"),
        wide("WORKSPACE UUID"),
        wide("SERVER"),
    ]);
    for (Fetched { typed: edge, .. }, access) in edges {
        let status = edge.status.clone().unwrap_or_default();
        table.push(vec![
            edge.name_any(),
            edge.spec.cluster_id.clone(),
            status.ready.to_string(),
            access.word().to_owned(),
            status.installer.clone().unwrap_or_else(|| "-".to_owned()),
            edge.spec.workspace_uuid.clone(),
            status.server.unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    let items: Vec<serde_json::Value> = edges
        .iter()
        .map(|(edge, access)| json!({ "edge": edge.raw, "install": access.json() }))
        .collect();
    Rendered {
        data: json!({ "edges": items }),
        table: table.render(false),
        wide: table.render(true),
        names: edges
            .iter()
            .map(|(e, _)| resource_name("Edge", &Edge::group(&()), &e.typed.name_any()))
            .collect(),
        empty: Some("No edges found: the platform has not registered any yet.".to_owned()),
        headers: true,
        rows_at: Some("edges"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    fn edge(name: &str, ready: bool) -> Fetched<Edge> {
        let raw = testdata::edge_json(name, ready);
        Fetched {
            typed: serde_json::from_value(raw.clone()).unwrap(),
            raw,
        }
    }

    #[test]
    fn each_edge_shows_readiness_and_your_permission() {
        let rendered = edge_list(&[
            (
                edge("edge-1", true),
                Access::Allowed {
                    reason: "bound".into(),
                },
            ),
            (
                edge("edge-2", false),
                Access::Denied {
                    reason: String::new(),
                },
            ),
            (
                edge("edge-3", true),
                Access::Unknown {
                    error: "forbidden".into(),
                },
            ),
        ]);
        assert_eq!(
            rendered.table,
            "\
NAME     CLUSTER          READY   INSTALL   INSTALLER
edge-1   cluster-edge-1   true    yes       installer-7
edge-2   cluster-edge-2   false   no        installer-7
edge-3   cluster-edge-3   true    unknown   installer-7
"
        );
        assert!(rendered.wide.contains("https://10.0.0.7:6443"));
        assert_eq!(rendered.data["edges"][0]["install"]["allowed"], true);
        assert_eq!(
            rendered.data["edges"][1]["edge"]["metadata"]["name"],
            "edge-2"
        );
    }
}
