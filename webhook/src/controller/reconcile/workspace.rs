//! One reconcile of a Workspace: observe, decide, act — again while the decision says
//! the next step depends on what was just done.

use std::{sync::Arc, time::Duration};

use kube::{Api, ResourceExt, runtime::controller::Action as Requeue};
use providers_shared::{
    api::Workspace,
    installer::{self, Next},
};
use tokio::time::Instant;
use tracing::Instrument;

use crate::controller::{
    reconcile::context::Context,
    reconcile::execute::{Outcome, execute},
    reconcile::observe::observe,
    reconcile::workspace_memory::WorkspaceMemory,
    support::error::{Error, Result},
    support::metrics::ReasonLabels,
};

/// Passes in one reconcile before handing back to the queue. A fresh install takes three
/// (bind and prepare, create the identity and the Job, record the Job); cleanup two.
const PASSES: usize = 8;

/// What every reconcile is given: the controller's handles, and what it remembers of each
/// Workspace.
pub struct Reconciler {
    pub ctx: Arc<Context>,
    pub memory: WorkspaceMemory,
}

impl Reconciler {
    pub fn new(ctx: Arc<Context>) -> Self {
        Self {
            ctx,
            memory: WorkspaceMemory::default(),
        }
    }
}

/// One reconcile, in its span: every line logged under it (the observation, the actions,
/// the runner's log, Helm's records) says which Workspace, and which sealed attempt the
/// reconcile started from.
pub async fn reconcile(cached: Arc<Workspace>, reconciler: Arc<Reconciler>) -> Result<Requeue> {
    let span = tracing::info_span!(
        "reconcile",
        workspace = %providers_shared::text::object_key(
            &cached.namespace().unwrap_or_default(),
            &cached.name_any(),
        ),
        attempt = cached.spec.plan.as_ref().map(|sealed| sealed.plan.attempt),
    );
    async move {
        let ctx = &reconciler.ctx;
        let started = Instant::now();
        let result = {
            // Counted down when the reconcile ends or is dropped with its term.
            let _in_flight = InFlight::new(&ctx.metrics.reconciles_in_flight);
            passes(&cached, ctx, &reconciler.memory).await
        };
        ctx.metrics
            .reconcile_duration
            .observe(started.elapsed().as_secs_f64());
        result
    }
    .instrument(span)
    .await
}

/// One reconcile in `providers_installer_reconciles_in_flight`, for as long as it lives.
struct InFlight<'a>(&'a prometheus_client::metrics::gauge::Gauge);

impl<'a> InFlight<'a> {
    fn new(gauge: &'a prometheus_client::metrics::gauge::Gauge) -> Self {
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

async fn passes(cached: &Workspace, ctx: &Context, memory: &WorkspaceMemory) -> Result<Requeue> {
    let namespace = cached.namespace().unwrap_or_default();
    let name = cached.name_any();
    let key = providers_shared::text::object_key(&namespace, &name);
    let api: Api<Workspace> = Api::namespaced(ctx.hub.clone(), &namespace);
    // Another replica works this edge: nothing to do here until the
    // edge is this replica's (taking it wakes its Workspaces).
    if !ctx
        .shards
        .may_write(&crate::controller::reconcile::observe::edge_of(cached))
    {
        return Ok(Requeue::await_change());
    }
    tracing::debug!("reconciling");
    let resync = Requeue::requeue(ctx.config.resync);
    let live = || async {
        ctx.metrics.workspace_reads.inc();
        api.get_opt(&name).await.map_err(Error::Hub)
    };
    // The watch cache's copy, unless it has not yet seen the installer's own last write.
    let mut current = if memory.cache_behind(&key, cached.resource_version().as_deref()) {
        match live().await? {
            Some(workspace) => workspace,
            None => return Ok(gone(memory, &key)),
        }
    } else {
        cached.clone()
    };
    // Whether `current` was read live, or returned by a write, during this reconcile.
    let mut fresh = false;
    let mut wrote = false;
    let outcome = 'passes: {
        for _ in 0..PASSES {
            let mut observation = observe(&ctx.observe_handles(), current.clone()).await?;
            let mut decision = installer::decide(&observation.observed(), &ctx.settings);
            // Revoking and deleting are decided from the Workspace itself, never from a
            // watch cache alone: from the API server's answer to a write of it that comes
            // first (the decision is cut there and taken again), or else from a live read.
            if !fresh && decision.revokes_or_deletes() && !decision.cut_at_live_read() {
                let Some(workspace) = live().await? else {
                    break 'passes Ok(gone(memory, &key));
                };
                fresh = true;
                observation = observe(&ctx.observe_handles(), workspace).await?;
                decision = installer::decide(&observation.observed(), &ctx.settings);
            }
            tracing::debug!(
                actions = ?decision.actions.iter().map(|a| a.name()).collect::<Vec<_>>(),
                next = ?decision.next,
                "decided"
            );
            let executed = execute(&ctx.execute_handles(), &observation, &decision.actions).await;
            match executed.written {
                Some(written) => {
                    current = written;
                    fresh = true;
                    wrote = true;
                }
                None => current = observation.workspace.clone(),
            }
            // An error ends the reconcile, after the installer's own writes are noted below.
            let outcome = match executed.outcome {
                Ok(outcome) => outcome,
                Err(error) => break 'passes Err(error),
            };
            match outcome {
                Outcome::Done => {}
                Outcome::ObserveAgain { action, message } => {
                    tracing::debug!(action, %message, "interrupted; observing again");
                    match live().await? {
                        Some(workspace) => current = workspace,
                        None => break 'passes Ok(gone(memory, &key)),
                    }
                    fresh = true;
                    continue;
                }
                Outcome::EdgeDown { edge, message } => {
                    tracing::info!(%edge, %message, "the edge is unreachable; observing again");
                    // Until it answers again, decisions see it unreachable, not its caches.
                    if let Some(cache) = &observation.cache {
                        cache.set_unreachable(Some(message));
                    }
                    continue;
                }
                Outcome::EdgeNotHeld { edge } => {
                    tracing::info!(%edge, "the edge is no longer this replica's; stopping");
                    break 'passes Ok(Requeue::await_change());
                }
            }
            match decision.next {
                Next::Continue => continue,
                Next::Idle => {
                    memory.reset_backoff(&key);
                    break 'passes Ok(resync);
                }
                Next::After(seconds) => {
                    memory.reset_backoff(&key);
                    break 'passes Ok(Requeue::requeue(
                        Duration::from_secs(seconds).min(ctx.config.resync),
                    ));
                }
                Next::Backoff => {
                    let delay = memory.backoff(&key);
                    tracing::info!(retry_in = ?delay, "waiting for the edge; backing off");
                    break 'passes Ok(Requeue::requeue(delay));
                }
            }
        }
        Ok(Requeue::requeue(Duration::from_millis(500)))
    };
    if wrote {
        memory.remember_written_version(&key, current.resource_version().as_deref());
    }
    outcome
}

/// The Workspace is gone from the hub: nothing more to do for it.
fn gone(memory: &WorkspaceMemory, key: &str) -> Requeue {
    memory.reset_backoff(key);
    memory.remember_written_version(key, None);
    Requeue::await_change()
}

pub fn error_policy(cached: Arc<Workspace>, error: &Error, reconciler: Arc<Reconciler>) -> Requeue {
    let ctx = &reconciler.ctx;
    let key = providers_shared::text::object_key(
        &cached.namespace().unwrap_or_default(),
        &cached.name_any(),
    );
    ctx.metrics
        .reconcile_errors
        .get_or_create(&ReasonLabels {
            reason: error.kind().to_owned(),
        })
        .inc();
    let delay = reconciler.memory.backoff(&key);
    tracing::warn!(workspace = %key, error = %error, retry_in = ?delay, "reconcile failed");
    Requeue::requeue(delay)
}
