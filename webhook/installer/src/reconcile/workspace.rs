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

use crate::{
    edge::EdgeView,
    reconcile::between_reconciles::BetweenReconciles,
    reconcile::context::Context,
    reconcile::execute::execute,
    reconcile::observe::{OwnedObservation, observe},
    reconcile::pass_end::{PassEnd, Wait, end_of},
    reconcile::prepare::{edge_of, prepare},
    support::error::{Error, Result},
    support::metrics::ReasonLabels,
    support::stop::Stop,
};

/// Passes in one reconcile before handing back to the queue. A fresh install takes three
/// (bind and prepare, create the identity and the Job, record the Job); cleanup two.
const PASSES: usize = 8;

/// What every reconcile is given: the controller's handles, and what it remembers of each
/// Workspace.
pub struct Reconciler {
    pub ctx: Arc<Context>,
    pub between_reconciles: BetweenReconciles,
}

impl Reconciler {
    pub fn new(ctx: Arc<Context>) -> Self {
        Self {
            ctx,
            between_reconciles: BetweenReconciles::default(),
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
            // Counted down when the reconcile ends or is dropped with the replica's run.
            let _in_flight = InFlight::new(&ctx.metrics.reconciles_in_flight);
            passes(&cached, ctx, &reconciler.between_reconciles).await
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

async fn passes(cached: &Workspace, ctx: &Context, kept: &BetweenReconciles) -> Result<Requeue> {
    let namespace = cached.namespace().unwrap_or_default();
    let name = cached.name_any();
    let key = providers_shared::text::object_key(&namespace, &name);
    // Another replica works this edge: nothing to do here until the edge is this
    // replica's (taking it wakes its Workspaces).
    if !ctx.shards.may_write(&edge_of(cached)) {
        return Ok(Requeue::await_change());
    }
    tracing::debug!("reconciling");
    let live = Live {
        api: Api::namespaced(ctx.hub.clone(), &namespace),
        name: &name,
        ctx,
    };
    // The watch cache's copy, unless it has not yet seen the installer's own last write.
    let current = if kept.cache_behind(&key, cached.resource_version().as_deref()) {
        match live.read().await? {
            Some(workspace) => workspace,
            None => return Ok(gone(kept, &key)),
        }
    } else {
        cached.clone()
    };
    let mut pass = Pass {
        current,
        fresh: false,
        wrote: false,
    };
    let mut end = Ok(PassEnd::Again);
    for _ in 0..PASSES {
        end = one_pass(ctx, &live, &mut pass).await;
        if !matches!(end, Ok(PassEnd::Again)) {
            break;
        }
    }
    // Noted also when the reconcile ends in an error.
    if pass.wrote {
        kept.remember_written_version(&key, pass.current.resource_version().as_deref());
    }
    match end? {
        // Passes left over: the queue takes it up again shortly.
        PassEnd::Again | PassEnd::AgainFromLive | PassEnd::AgainEdgeDown(_) => {
            Ok(Requeue::requeue(Duration::from_millis(500)))
        }
        PassEnd::Gone => Ok(gone(kept, &key)),
        PassEnd::Wait(wait) => Ok(requeue(wait, ctx, kept, &key)),
    }
}

/// The Workspace as a reconcile carries it from pass to pass.
struct Pass {
    current: Workspace,
    /// Whether `current` was read live, or returned by a write, during this reconcile.
    fresh: bool,
    /// Whether one of the installer's own writes returned it.
    wrote: bool,
}

/// A live read of the Workspace, counted.
struct Live<'a> {
    api: Api<Workspace>,
    name: &'a str,
    ctx: &'a Context,
}

impl Live<'_> {
    async fn read(&self) -> Result<Option<Workspace>> {
        self.ctx.metrics.workspace_reads.inc();
        self.api.get_opt(self.name).await.map_err(Error::Hub)
    }
}

/// One pass: observe, decide, execute; what it comes to is a [`PassEnd`]. Observing again
/// from a live read, or with the edge seen unreachable, is done here, so the reconcile
/// only loops on `Again`.
async fn one_pass(ctx: &Context, live: &Live<'_>, pass: &mut Pass) -> Result<PassEnd> {
    let edge = ctx.edges.lookup(&edge_of(&pass.current));
    let mut observation = match look(ctx, &edge, pass.current.clone()).await {
        Ok(observation) => observation,
        Err(stop) => return end_of(Err(stop), Next::Idle),
    };
    let mut decision = installer::decide(&observation.as_observation(), &ctx.settings);
    // Revoking and deleting are decided from the Workspace itself, never from a watch
    // cache alone: from the API server's answer to a write of it that comes first (the
    // decision is cut there and taken again), or else from a live read.
    if !pass.fresh && decision.revokes_or_deletes() {
        match decision.cut_at_live_read() {
            Some(cut) => decision = cut,
            None => {
                let Some(workspace) = live.read().await? else {
                    return Ok(PassEnd::Gone);
                };
                pass.fresh = true;
                observation = match look(ctx, &edge, workspace).await {
                    Ok(observation) => observation,
                    Err(stop) => return end_of(Err(stop), Next::Idle),
                };
                decision = installer::decide(&observation.as_observation(), &ctx.settings);
            }
        }
    }
    tracing::debug!(
        actions = ?decision.actions.iter().map(|a| a.name()).collect::<Vec<_>>(),
        next = ?decision.next,
        "decided"
    );
    let executed = execute(
        &ctx.execute_handles(),
        &edge,
        &observation,
        &decision.actions,
    )
    .await;
    match executed.written {
        Some(written) => {
            pass.current = written;
            pass.fresh = true;
            pass.wrote = true;
        }
        None => pass.current = observation.workspace,
    }
    match &executed.stopped {
        Err(stop @ Stop::Interrupted { .. }) => tracing::debug!(%stop, "observing again"),
        Err(stop @ Stop::EdgeDown { .. }) => tracing::info!(%stop, "observing again"),
        Err(stop @ Stop::EdgeNotHeld { .. }) => tracing::info!(%stop, "stopping"),
        Err(Stop::Failed(_)) | Ok(()) => {}
    }
    match end_of(executed.stopped, decision.next)? {
        PassEnd::AgainFromLive => {
            let Some(workspace) = live.read().await? else {
                return Ok(PassEnd::Gone);
            };
            pass.current = workspace;
            pass.fresh = true;
            Ok(PassEnd::Again)
        }
        PassEnd::AgainEdgeDown(message) => {
            // Until it answers again, decisions see it unreachable, not its caches.
            if let Some(cache) = &edge.cache {
                cache.set_unreachable(Some(message));
            }
            Ok(PassEnd::Again)
        }
        other => Ok(other),
    }
}

/// The two steps before a decision: ready the edge's caches for `workspace` (the only
/// writes, to the caches, and the only watches started), then observe it (reads only).
async fn look(
    ctx: &Context,
    edge: &EdgeView,
    workspace: Workspace,
) -> Result<OwnedObservation, Stop> {
    let prepared = prepare(edge, &workspace).await?;
    observe(&ctx.observe_handles(), edge, prepared, workspace).await
}

/// What the queue is told once a reconcile is over; what a Workspace remembers of its
/// backoff is kept here.
fn requeue(wait: Wait, ctx: &Context, kept: &BetweenReconciles, key: &str) -> Requeue {
    match wait {
        Wait::Change => Requeue::await_change(),
        Wait::Resync => {
            kept.reset_backoff(key);
            Requeue::requeue(ctx.config.resync)
        }
        Wait::After(delay) => {
            kept.reset_backoff(key);
            Requeue::requeue(delay.min(ctx.config.resync))
        }
        Wait::Backoff => {
            let delay = kept.backoff(key);
            tracing::info!(retry_in = ?delay, "waiting for the edge; backing off");
            Requeue::requeue(delay)
        }
    }
}

/// The Workspace is gone from the hub: nothing more to do for it.
fn gone(kept: &BetweenReconciles, key: &str) -> Requeue {
    kept.reset_backoff(key);
    kept.remember_written_version(key, None);
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
    let delay = reconciler.between_reconciles.backoff(&key);
    tracing::warn!(workspace = %key, error = %error, retry_in = ?delay, "reconcile failed");
    Requeue::requeue(delay)
}
