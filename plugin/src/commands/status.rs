//! `status [NAME]`: one Workspace in detail (ending with its recent Events), the list, or
//! with `-w` every change as it happens.

use k8s_openapi::jiff::Timestamp;
use providers_shared::api::Workspace;

use crate::{
    cli::StatusArgs,
    commands::{Ctx, status_watch},
    events, objects,
    report::user_error,
    views::{
        events::events_section,
        workspaces::{status_detail, status_list},
    },
    wait,
};

pub async fn run(ctx: &Ctx, args: StatusArgs) -> anyhow::Result<()> {
    if args.watch {
        return status_watch::run(ctx, &args).await;
    }
    let client = &ctx.conn.client;
    let namespace = &ctx.conn.namespace;
    let Some(name) = args.name else {
        if args.wait.wait {
            return Err(user_error(
                "--wait needs a Workspace name",
                Some("kubectl provider status NAME --wait".to_owned()),
            ));
        }
        let scope = (!args.all_namespaces).then_some(namespace.as_str());
        let items =
            objects::list::<Workspace>(client, scope, args.selector.selector.as_deref()).await?;
        return ctx.print(&status_list(
            &items,
            args.all_namespaces,
            namespace,
            Timestamp::now(),
        ));
    };
    let item = if args.wait.wait {
        wait::until_done(&ctx.conn, namespace, &name, args.wait.timeout).await?
    } else {
        objects::get::<Workspace>(client, Some(namespace), &name).await?
    };
    let now = Timestamp::now();
    let mut rendered = status_detail(&item, ctx.global.namespace.as_deref(), now);
    if ctx.output().is_table() {
        let section = events_section(&events::recent(client, namespace, &item.typed).await, now);
        rendered.table.push_str(&section);
        rendered.wide.push_str(&section);
    }
    ctx.print(&rendered)
}
