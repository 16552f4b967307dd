//! `retry NAME`, `repair NAME` and `rollback NAME`: ask for a new attempt of a kept plan by
//! raising `spec.retry` (a rollback also names the attempt whose plan to seal again).

use providers_shared::api::{Cause, MAX_RETRY, Workspace};

use crate::{
    attempt_state::retry_rules::{repair_allowed, retry_allowed, rollback_target},
    cli::{RetryArgs, RollbackArgs},
    commands::{
        Ctx,
        write::{Write, apply, is_stale, report},
    },
    intent::Intent,
    objects,
    report::user_error,
};

/// Which kept plan the raised counter asks for.
#[derive(Clone, Copy)]
pub enum Ask {
    /// The failed attempt's plan.
    Retry,
    /// The installed plan, its release having drifted.
    Repair,
    /// An earlier succeeded attempt's plan (this one, or the newest before the current).
    Rollback(Option<i64>),
}

pub async fn repair(ctx: &Ctx, args: RetryArgs) -> anyhow::Result<()> {
    raise(ctx, &args.name, &args.wait, Ask::Repair).await
}

pub async fn rollback(ctx: &Ctx, args: RollbackArgs) -> anyhow::Result<()> {
    raise(ctx, &args.name, &args.wait, Ask::Rollback(args.to_attempt)).await
}

const ATTEMPTS: usize = 3;

pub async fn run(ctx: &Ctx, args: RetryArgs) -> anyhow::Result<()> {
    raise(ctx, &args.name, &args.wait, Ask::Retry).await
}

async fn raise(
    ctx: &Ctx,
    name: &str,
    wait: &crate::cli::WaitFlags,
    ask: Ask,
) -> anyhow::Result<()> {
    let mut tries = 0;
    loop {
        tries += 1;
        let live =
            objects::get::<Workspace>(&ctx.conn.client, Some(&ctx.conn.namespace), name).await?;
        let rollback_to = match ask {
            Ask::Retry => retry_allowed(&live.typed, name).map(|()| None),
            Ask::Repair => repair_allowed(&live.typed, name).map(|()| None),
            Ask::Rollback(to) => rollback_target(&live.typed, name, to).map(Some),
        }
        .map_err(|(message, hint)| user_error(message, Some(hint)))?;
        let mut intent = Intent::from_spec(&live.typed.spec);
        intent.retry = Some(raised_retry(intent.retry, name)?);
        intent.rollback_to = rollback_to;
        let write = Write {
            name,
            intent: &intent,
            // Two retries racing read the same counter; only the first write may count.
            resource_version: live.typed.metadata.resource_version.as_deref(),
            force: true,
            dry_run: false,
        };
        match apply(ctx, &write).await {
            Ok(result) => {
                let done = match ask {
                    Ask::Retry => "retried".to_owned(),
                    Ask::Repair => "repaired".to_owned(),
                    Ask::Rollback(_) => {
                        format!("rolled back to attempt {}", rollback_to.unwrap_or_default())
                    }
                };
                let sealed = result.typed.spec.plan.as_ref().map(|p| &p.plan);
                let before = live.typed.spec.plan.as_ref().map(|p| p.plan.attempt);
                let verb = match sealed {
                    Some(plan) if Some(plan.attempt) > before => {
                        // Say what the webhook sealed, not what was asked: the plan says
                        // why it runs.
                        if let Ask::Rollback(_) = ask
                            && (plan.cause != Some(Cause::Rollback) || plan.restores != rollback_to)
                        {
                            return Err(user_error(
                                format!(
                                    "attempt {} was sealed as {:?}, not as a rollback to attempt {}",
                                    plan.attempt,
                                    plan.cause,
                                    rollback_to.unwrap_or_default()
                                ),
                                Some(format!("see kubectl provider history {name}")),
                            ));
                        }
                        format!("{done} (attempt {} sealed)", plan.attempt)
                    }
                    _ if matches!(ask, Ask::Rollback(_)) => {
                        return Err(user_error(
                            "the webhook sealed no rollback".to_owned(),
                            Some(format!("see kubectl provider status {name}")),
                        ));
                    }
                    _ => format!("retry requested (spec.retry={})", intent.retry.unwrap_or(1)),
                };
                let wait = wait.wait.then_some(wait.timeout);
                return report(ctx, &result, &verb, false, wait).await;
            }
            Err(error) if is_stale(&error) && tries < ATTEMPTS => continue,
            Err(error) => return Err(error),
        }
    }
}

/// `spec.retry` one higher, or why it cannot be raised: it is at the most the API allows.
fn raised_retry(current: Option<i64>, name: &str) -> anyhow::Result<i64> {
    current
        .unwrap_or(0)
        .checked_add(1)
        .filter(|raised| *raised <= MAX_RETRY)
        .ok_or_else(|| {
            user_error(
                format!(
                    "spec.retry of {name} is {}, the largest value the API allows ({MAX_RETRY}): it cannot be raised",
                    current.unwrap_or_default()
                ),
                Some(format!(
                    "delete {name} and create it again to start its attempts over"
                )),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_goes_up_by_one() {
        assert_eq!(raised_retry(None, "w").unwrap(), 1);
        assert_eq!(raised_retry(Some(41), "w").unwrap(), 42);
        assert_eq!(raised_retry(Some(MAX_RETRY - 1), "w").unwrap(), MAX_RETRY);
    }

    #[test]
    fn a_counter_at_its_largest_value_is_an_error_not_an_overflow() {
        for at in [MAX_RETRY, i64::MAX] {
            let error = raised_retry(Some(at), "w").unwrap_err().to_string();
            assert!(error.contains("cannot be raised"), "{error}");
        }
    }
}
