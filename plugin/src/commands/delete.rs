//! `delete NAME`: delete a Workspace and say what stays on the edge.

use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams},
};
use providers_shared::{api::Workspace, installer::names};
use serde_json::json;

use crate::{
    cli::DeleteArgs, commands::Ctx, objects, output::Rendered, views::workspaces::name_of, wait,
};

pub async fn run(ctx: &Ctx, args: DeleteArgs) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let namespace = &ctx.conn.namespace;
    let item = objects::get::<Workspace>(client, Some(namespace), &args.name).await?;
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::erase::<Workspace>(&()),
    );
    if args.abandon {
        let reason = args.reason.clone().unwrap_or_else(|| {
            "the edge is gone for good (kubectl provider delete --abandon)".to_owned()
        });
        let mark = json!({"metadata": {"annotations": {names::ANNOTATION_ABANDON: reason}}});
        api.patch(&args.name, &PatchParams::default(), &Patch::Merge(&mark))
            .await?;
    }
    api.delete(&args.name, &DeleteParams::default()).await?;
    let mut text = format!("{} deleted\n", name_of(&item.typed));
    if args.abandon {
        text.push_str(
            "  Abandoned: the installer finishes the deletion without cleaning up on the edge; what remains there stays.\n",
        );
    } else {
        for line in left_in_place(&item.typed) {
            text.push_str(&format!("  {line}\n"));
        }
    }
    ctx.print(&Rendered::text(
        item.raw.clone(),
        text,
        vec![name_of(&item.typed)],
    ))?;
    if args.wait {
        wait::until_deleted(&ctx.conn, namespace, &args.name, args.timeout).await?;
        ctx.say(&format!("{} is gone", name_of(&item.typed)))?;
    }
    Ok(())
}

/// What deleting deliberately leaves on the edge, and what it removes.
pub fn left_in_place(ws: &Workspace) -> Vec<String> {
    let Some(plan) = ws.spec.plan.as_ref().map(|p| &p.plan) else {
        return vec!["No attempt was sealed, so nothing was installed on an edge.".to_owned()];
    };
    let mut lines = vec![format!(
        "Left in place on edge {} (cluster {}): Helm release {} in namespace {}, the namespace and its volumes (PVCs).",
        plan.edge_name, plan.cluster, plan.release, plan.namespace
    )];
    if let Some(secret) = ws
        .status
        .as_ref()
        .and_then(|s| s.runtime_credential_secret.as_ref())
    {
        lines.push(format!(
            "Also left: the provider's hub credential (Secret {secret} in namespace {}), for a later registration.",
            plan.namespace
        ));
    }
    lines.push(format!(
        "Removed: attempt {}'s runner identity. No new attempt starts. To remove the release itself, run helm uninstall {} -n {} on the edge.",
        plan.attempt, plan.release, plan.namespace
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;
    use serde_json::json;

    #[test]
    fn deleting_names_what_stays_and_what_goes() {
        let ws: Workspace = serde_json::from_value(testdata::workspace_json(
            json!({"runtimeCredentialSecret": "podinfo-hub"}),
        ))
        .unwrap();
        let lines = left_in_place(&ws);
        assert_eq!(
            lines[0],
            "Left in place on edge edge-1 (cluster cluster-1): Helm release podinfo in namespace podinfo, the namespace and its volumes (PVCs)."
        );
        assert!(lines[1].contains("Secret podinfo-hub"));
        assert!(lines[2].starts_with("Removed: attempt 1's runner identity."));
    }
}
