//! `edges [NAME]`: each edge, and whether the caller may install onto it, asked of the API
//! server with a SelfSubjectAccessReview on that exact edge (the same check the webhook
//! makes with a SubjectAccessReview).

use futures::{StreamExt, stream};
use kube::{Client, ResourceExt};
use providers_shared::api::Edge;

use crate::{
    access::{self, Access},
    cli::SelectorFlag,
    commands::Ctx,
    objects,
    views::edges::edge_list,
};

pub async fn run(ctx: &Ctx, name: Option<String>, selector: SelectorFlag) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let edges = match name {
        Some(name) => vec![objects::get::<Edge>(client, None, &name).await?],
        None => objects::list::<Edge>(client, None, selector.selector.as_deref()).await?,
    };
    // A few reviews at a time: quick for a handful of edges, gentle on the API server for many.
    let access: Vec<Access> = stream::iter(
        edges
            .iter()
            .map(|e| may_install(client, e.typed.name_any())),
    )
    .buffered(8)
    .collect()
    .await;
    ctx.print(&edge_list(
        &edges.into_iter().zip(access).collect::<Vec<_>>(),
    ))
}

async fn may_install(client: &Client, edge: String) -> Access {
    access::ask(client, "edges", "install", edge).await
}
