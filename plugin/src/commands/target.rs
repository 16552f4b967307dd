//! `target NAME`.

use providers_shared::api::Workspace;

use crate::{commands::Ctx, objects, views::workspaces::target};

pub async fn run(ctx: &Ctx, name: String) -> anyhow::Result<()> {
    let item =
        objects::get::<Workspace>(&ctx.conn.client, Some(&ctx.conn.namespace), &name).await?;
    if item.typed.spec.plan.is_none() {
        ctx.note(
            "note: no plan is sealed yet; the cluster, namespace and release are fixed when it is",
        );
    }
    ctx.print(&target(&item))
}
