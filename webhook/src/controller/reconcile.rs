//! One reconcile of a Workspace: observe, decide, act — again while the decision says
//! the next step depends on what was just done.

use std::{sync::Arc, time::Duration};

use kube::{Api, ResourceExt, runtime::controller::Action as Requeue};
use providers::{
    api::Workspace,
    installer::{self, Next},
};
use tokio::time::Instant;

use super::{
    context::Context,
    error::{Error, Result},
    execute::execute,
    metrics::ReasonLabels,
    observe::observe,
};

/// Passes in one reconcile before handing back to the queue. A fresh install takes three
/// (bind and prepare, create the identity and the Job, record the Job); cleanup two.
const PASSES: usize = 8;

pub async fn reconcile(cached: Arc<Workspace>, ctx: Arc<Context>) -> Result<Requeue> {
    let started = Instant::now();
    let result = passes(&cached, &ctx).await;
    ctx.metrics
        .reconcile_duration
        .observe(started.elapsed().as_secs_f64());
    result
}

async fn passes(cached: &Workspace, ctx: &Context) -> Result<Requeue> {
    let namespace = cached.namespace().unwrap_or_default();
    let name = cached.name_any();
    let key = format!("{namespace}/{name}");
    let api: Api<Workspace> = Api::namespaced(ctx.hub.clone(), &namespace);
    let resync = Requeue::requeue(Duration::from_secs(ctx.args.resync.max(1)));
    for _ in 0..PASSES {
        // Decisions come from the Workspace itself, never from the watch cache alone.
        let Some(fresh) = api.get_opt(&name).await.map_err(Error::Hub)? else {
            ctx.reset_backoff(&key);
            return Ok(Requeue::await_change());
        };
        let observation = observe(ctx, fresh).await?;
        let decision = installer::decide(&observation.observed(), &ctx.settings);
        tracing::debug!(
            workspace = %key,
            actions = ?decision.actions.iter().map(|a| a.name()).collect::<Vec<_>>(),
            next = ?decision.next,
            "decided"
        );
        match execute(ctx, &observation, &decision.actions).await {
            Ok(()) => {}
            Err(Error::Interrupted { action, message }) => {
                tracing::debug!(workspace = %key, action, %message, "interrupted; observing again");
                continue;
            }
            Err(Error::EdgeUnreachable { edge, message }) => {
                tracing::info!(workspace = %key, %edge, %message, "the edge is unreachable; observing again");
                continue;
            }
            Err(other) => return Err(other),
        }
        match decision.next {
            Next::Continue => continue,
            Next::Idle => {
                ctx.reset_backoff(&key);
                return Ok(resync);
            }
            Next::After(seconds) => {
                ctx.reset_backoff(&key);
                return Ok(Requeue::requeue(Duration::from_secs(
                    seconds.min(ctx.args.resync.max(1)),
                )));
            }
            Next::Backoff => {
                let delay = ctx.backoff(&key);
                tracing::info!(workspace = %key, retry_in = ?delay, "waiting for the edge; backing off");
                return Ok(Requeue::requeue(delay));
            }
        }
    }
    Ok(Requeue::requeue(Duration::from_millis(500)))
}

pub fn error_policy(cached: Arc<Workspace>, error: &Error, ctx: Arc<Context>) -> Requeue {
    let key = format!(
        "{}/{}",
        cached.namespace().unwrap_or_default(),
        cached.name_any()
    );
    ctx.metrics
        .reconcile_errors
        .get_or_create(&ReasonLabels {
            reason: error.kind().to_owned(),
        })
        .inc();
    let delay = ctx.backoff(&key);
    tracing::warn!(workspace = %key, error = %error, retry_in = ?delay, "reconcile failed");
    Requeue::requeue(delay)
}
