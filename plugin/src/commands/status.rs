//! `status [NAME]`: one Workspace in detail, or the list.

use k8s_openapi::jiff::Timestamp;
use providers::api::Workspace;

use crate::{
    cli::StatusArgs,
    commands::Ctx,
    objects,
    views::workspaces::{status_detail, status_list},
    wait,
};

pub async fn run(ctx: &Ctx, args: StatusArgs) -> anyhow::Result<()> {
    let client = &ctx.conn.client;
    let namespace = &ctx.conn.namespace;
    let Some(name) = args.name else {
        if args.wait.wait {
            return Err(crate::report::user_error(
                "--wait needs a Workspace name",
                Some("kubectl provider status NAME --wait".to_owned()),
            ));
        }
        let scope = (!args.all_namespaces).then_some(namespace.as_str());
        let items = objects::list::<Workspace>(client, scope).await?;
        return ctx.print(&status_list(
            &items,
            args.all_namespaces,
            namespace,
            Timestamp::now(),
        ));
    };
    let item = if args.wait.wait {
        wait::until_done(client, namespace, &name, args.wait.timeout).await?
    } else {
        objects::get::<Workspace>(client, Some(namespace), &name).await?
    };
    ctx.print(&status_detail(
        &item,
        ctx.global.namespace.as_deref(),
        Timestamp::now(),
    ))
}
