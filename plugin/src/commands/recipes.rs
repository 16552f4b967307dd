//! `recipes [NAME]`.

use providers::api::Recipe;

use crate::{
    commands::Ctx,
    objects,
    views::recipes::{recipe_detail, recipe_list},
};

pub async fn run(ctx: &Ctx, name: Option<String>) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let rendered = match name {
        Some(name) => recipe_detail(&objects::get::<Recipe>(client, None, &name).await?),
        None => recipe_list(&objects::list::<Recipe>(client, None).await?),
    };
    ctx.print(&rendered)
}
