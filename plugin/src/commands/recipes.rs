//! `recipes [NAME]`: the recipes, and whether the caller may use each, asked of the API
//! server with a SelfSubjectAccessReview on that exact recipe (the same check the webhook
//! makes when it seals a plan).

use futures::{StreamExt, stream};
use kube::ResourceExt;
use providers_shared::api::Recipe;

use crate::{
    access::{self, Access},
    cli::SelectorFlag,
    commands::Ctx,
    objects,
    views::recipes::{recipe_detail, recipe_list},
};

pub async fn run(ctx: &Ctx, name: Option<String>, selector: SelectorFlag) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let labels = selector.selector.as_deref();
    let recipes = match &name {
        Some(name) => vec![objects::get::<Recipe>(client, None, name).await?],
        None => objects::list::<Recipe>(client, None, labels).await?,
    };
    // A few reviews at a time: quick for a handful of recipes, gentle on the API server.
    let access: Vec<Access> = stream::iter(
        recipes
            .iter()
            .map(|r| access::ask(client, "recipes", "use", r.typed.name_any())),
    )
    .buffered(8)
    .collect()
    .await;
    let rendered = match name {
        Some(_) => recipe_detail(&recipes[0], &access[0]),
        None => recipe_list(&recipes.into_iter().zip(access).collect::<Vec<_>>()),
    };
    ctx.print(&rendered)
}
