//! `history NAME`.

use providers_shared::api::Workspace;

use crate::{commands::Ctx, objects, views::workspaces::history};

pub async fn run(ctx: &Ctx, name: String) -> anyhow::Result<()> {
    let item =
        objects::get::<Workspace>(&ctx.conn.client, Some(&ctx.conn.namespace), &name).await?;
    ctx.print(&history(&item))
}
