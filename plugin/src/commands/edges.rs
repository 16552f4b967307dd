//! `edges [NAME]`: each edge, and whether the caller may install onto it, asked of the API
//! server with a SelfSubjectAccessReview on that exact edge (the same check the webhook
//! makes with a SubjectAccessReview).

use futures::{StreamExt, stream};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::{Api, Client, ResourceExt, api::PostParams};
use providers::api::{Edge, GROUP};

use crate::{
    cli::SelectorFlag,
    commands::Ctx,
    objects,
    report::report,
    views::edges::{Access, edge_list},
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
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(GROUP.to_owned()),
                resource: Some("edges".to_owned()),
                verb: Some("install".to_owned()),
                name: Some(edge),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    match api.create(&PostParams::default(), &review).await {
        Ok(answer) => {
            let status = answer.status.unwrap_or_default();
            let reason = status.reason.unwrap_or_default();
            if status.allowed {
                Access::Allowed { reason }
            } else {
                Access::Denied { reason }
            }
        }
        Err(e) => Access::Unknown {
            error: report(&e.into(), None).message,
        },
    }
}
