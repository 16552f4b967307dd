//! `retry NAME`: ask for a new attempt after a failed one, by raising `spec.retry`.

use providers::api::Workspace;

use crate::{
    cli::RetryArgs,
    commands::{
        Ctx,
        write::{Write, apply, is_stale, report},
    },
    intent::Intent,
    objects,
    report::user_error,
    state::retry_allowed,
};

const ATTEMPTS: usize = 3;

pub async fn run(ctx: &Ctx, args: RetryArgs) -> anyhow::Result<()> {
    let mut tries = 0;
    loop {
        tries += 1;
        let live =
            objects::get::<Workspace>(&ctx.conn.client, Some(&ctx.conn.namespace), &args.name)
                .await?;
        retry_allowed(&live.typed, &args.name)
            .map_err(|(message, hint)| user_error(message, Some(hint)))?;
        let mut intent = Intent::from_spec(&live.typed.spec);
        intent.retry = Some(intent.retry.unwrap_or(0) + 1);
        let write = Write {
            name: &args.name,
            intent: &intent,
            // Two retries racing read the same counter; only the first write may count.
            resource_version: live.typed.metadata.resource_version.as_deref(),
            force: true,
            dry_run: false,
        };
        match apply(ctx, &write).await {
            Ok(result) => {
                let verb = match result.typed.spec.plan.as_ref().map(|p| p.plan.attempt) {
                    Some(attempt)
                        if Some(attempt)
                            > live.typed.spec.plan.as_ref().map(|p| p.plan.attempt) =>
                    {
                        format!("retried (attempt {attempt} sealed)")
                    }
                    _ => format!("retry requested (spec.retry={})", intent.retry.unwrap_or(1)),
                };
                let wait = args.wait.wait.then_some(args.wait.timeout);
                return report(ctx, &result, &verb, false, wait).await;
            }
            Err(e) if is_stale(&e) && tries < ATTEMPTS => continue,
            Err(e) => return Err(e),
        }
    }
}
