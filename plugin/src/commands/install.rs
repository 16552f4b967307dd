//! `install NAME --recipe R --edge E ...`: declare a Workspace with server-side apply.

use serde_json::Map;

use crate::{
    cli::{DryRun, InstallArgs},
    commands::{
        Ctx,
        values_input::read_values,
        write::{Write, apply, report},
    },
    intent::{Intent, verb},
    objects,
};
use providers_shared::api::Workspace;

pub async fn run(ctx: &Ctx, args: InstallArgs) -> anyhow::Result<()> {
    let values = read_values(Map::new(), &args.values)?;
    let live =
        objects::get_opt::<Workspace>(&ctx.conn.client, Some(&ctx.conn.namespace), &args.name)
            .await?;
    let intent = Intent {
        recipe: args.recipe,
        edge: args.edge,
        version: args.version,
        values,
        // Not install's to change, but it must be sent: a field the plugin's manager
        // stops sending is removed, and the counter may only grow.
        retry: live.as_ref().and_then(|w| w.typed.spec.retry),
        rollback_to: None,
    };
    let dry_run = args.dry_run == DryRun::Server;
    let result = apply(
        ctx,
        &Write {
            name: &args.name,
            intent: &intent,
            resource_version: None,
            force: false,
            dry_run,
        },
    )
    .await?;
    // What the user declared and what was sealed; a new co-owner in managedFields alone is
    // not a change they would call one.
    let changed = live
        .as_ref()
        .is_none_or(|before| before.typed.spec != result.typed.spec);
    let verb = verb(live.is_some(), changed);
    report(
        ctx,
        &result,
        verb,
        dry_run,
        args.wait.wait.then_some(args.wait.timeout),
    )
    .await
}
