//! The PlanValues sweep of a leader's term: once its Workspace cache is in and then every
//! `--plan-values-sweep-interval`, values objects that no plan of their Workspace refers to any
//! more are deleted (`providers_shared::plan_values::sweep`). Each deletion is guarded by the
//! resourceVersion it was judged at, so one the webhook marked as sealed again meanwhile
//! stays; a seal the webhook made without a new mark is covered by the grace, which runs
//! from the mark plus the webhook's window written beside it (ADR 46).

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Preconditions},
    runtime::reflector::{ObjectRef, Store},
};
use providers_shared::{
    api::{PlanValues, Workspace},
    plan_values::{
        ANNOTATION_WORKSPACE,
        reseal::last_sealed_of,
        sweep::{StoredValues, Verdict, verdict},
    },
};

use crate::reconcile::context::Context;
use providers_runtime::synced::Synced;

/// What the PlanValues sweep works with: the hub, the mark of the Workspace cache's first
/// list, how often it sweeps and how long a sealed plan's values are kept whatever refers
/// to them.
pub struct ValuesSweepHandles<'a> {
    pub hub: &'a Client,
    pub workspaces_listed: &'a Synced,
    pub interval: Duration,
    pub grace: SignedDuration,
}

impl<'a> ValuesSweepHandles<'a> {
    /// The handles of the replica's context; `workspaces_listed` says when its Workspace cache
    /// has its first list.
    pub fn of(ctx: &'a Context, workspaces_listed: &'a Synced) -> Self {
        Self {
            hub: &ctx.hub,
            workspaces_listed,
            interval: ctx.config.plan_values_sweep_interval,
            grace: ctx.config.plan_values_grace,
        }
    }
}

pub async fn run(ctx: ValuesSweepHandles<'_>, workspaces: Store<Workspace>) {
    // The first sweep waits for the Workspace cache: before it is in, every object would
    // look unreferenced.
    ctx.workspaces_listed.wait().await;
    loop {
        if let Err(error) = sweep(&ctx, &workspaces).await {
            tracing::warn!(%error, "PlanValues sweep failed; trying again at the next interval");
        }
        tokio::time::sleep(ctx.interval).await;
    }
}

async fn sweep(
    ctx: &ValuesSweepHandles<'_>,
    workspaces: &Store<Workspace>,
) -> Result<(), kube::Error> {
    let listed = Api::<PlanValues>::all(ctx.hub.clone())
        .list_metadata(&ListParams::default())
        .await?;
    let now = Timestamp::now();
    tracing::debug!(listed = listed.items.len(), "sweeping PlanValues");
    for item in listed.items {
        let meta = &item.metadata;
        let namespace = meta.namespace.clone().unwrap_or_default();
        let annotations = meta.annotations.as_ref();
        let stored = StoredValues {
            name: meta.name.clone().unwrap_or_default(),
            workspace: annotations
                .and_then(|a| a.get(ANNOTATION_WORKSPACE))
                .cloned()
                .unwrap_or_default(),
            owners: meta
                .owner_references
                .iter()
                .flatten()
                .map(|owner| owner.uid.clone())
                .collect(),
            last_sealed: last_sealed_of(meta),
        };
        let cached = workspaces.get(&ObjectRef::new(&stored.workspace).within(&namespace));
        let delete = match verdict(&stored, cached.as_deref(), now, ctx.grace) {
            Verdict::Keep => false,
            Verdict::Delete => true,
            Verdict::DeleteUnlessOwnerExists => {
                let live = Api::<Workspace>::namespaced(ctx.hub.clone(), &namespace)
                    .get_metadata_opt(&stored.workspace)
                    .await?;
                !live.is_some_and(|workspace| {
                    let uid = workspace.metadata.uid.unwrap_or_default();
                    stored.owners.is_empty() || stored.owners.contains(&uid)
                })
            }
        };
        tracing::debug!(namespace, name = stored.name, delete, "judged PlanValues");
        if !delete {
            continue;
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: meta.uid.clone(),
                resource_version: meta.resource_version.clone(),
            }),
            ..DeleteParams::default()
        };
        match Api::<PlanValues>::namespaced(ctx.hub.clone(), &namespace)
            .delete(&stored.name, &params)
            .await
        {
            Ok(_) => tracing::info!(
                namespace,
                name = stored.name,
                workspace = stored.workspace,
                "deleted PlanValues no plan refers to any more"
            ),
            // Changed since it was listed (sealed again), or gone already.
            Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
