//! `set NAME --set ...`: change the values (or version) of a Workspace.

use providers_shared::api::Workspace;

use crate::{
    cli::{DryRun, SetArgs},
    commands::{
        Ctx,
        values_input::read_values,
        write::{Write, apply, is_stale, report},
    },
    intent::{Intent, verb},
    objects,
    report::user_error,
};

/// Reads, changes, writes; again if someone else wrote in between.
const ATTEMPTS: usize = 3;

pub async fn run(ctx: &Ctx, args: SetArgs) -> anyhow::Result<()> {
    if args.values.set.is_empty()
        && args.values.set_string.is_empty()
        && args.values.files.is_empty()
        && args.version.is_none()
    {
        return Err(user_error(
            "set needs something to change: --set, --set-string, -f or --version",
            Some(format!(
                "for example: kubectl provider set {} --set replicaCount=2",
                args.name
            )),
        ));
    }
    let dry_run = args.dry_run == DryRun::Server;
    let mut tries = 0;
    loop {
        tries += 1;
        let live =
            objects::get::<Workspace>(&ctx.conn.client, Some(&ctx.conn.namespace), &args.name)
                .await?;
        let mut intent = Intent::from_spec(&live.typed.spec);
        intent.values = read_values(intent.values, &args.values)?;
        if let Some(version) = &args.version {
            intent.version = Some(version.clone());
        }
        let write = Write {
            name: &args.name,
            intent: &intent,
            resource_version: live.typed.metadata.resource_version.as_deref(),
            force: args.force_conflicts,
            dry_run,
        };
        match apply(ctx, &write).await {
            Ok(result) => {
                let changed = live.typed.spec != result.typed.spec;
                let wait = args.wait.wait.then_some(args.wait.timeout);
                return report(ctx, &result, verb(true, changed), dry_run, wait).await;
            }
            Err(error) if is_stale(&error) && tries < ATTEMPTS => continue,
            Err(error) => return Err(error),
        }
    }
}
