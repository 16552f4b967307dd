//! `recipes [NAME]`.

use providers::api::Recipe;

use crate::{
    cli::SelectorFlag,
    commands::Ctx,
    objects,
    views::recipes::{recipe_detail, recipe_list},
};

pub async fn run(ctx: &Ctx, name: Option<String>, selector: SelectorFlag) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let labels = selector.selector.as_deref();
    let rendered = match name {
        Some(name) => recipe_detail(&objects::get::<Recipe>(client, None, &name).await?),
        None => recipe_list(&objects::list::<Recipe>(client, None, labels).await?),
    };
    ctx.print(&rendered)
}
