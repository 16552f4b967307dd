//! Runs a decision's actions in order, stopping at the first that fails. Every write is
//! guarded: Workspace writes test its UID, edge deletions carry UID preconditions, and a
//! create that finds the object already there stops the pass so the next one observes it.

use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{Namespace, Secret, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Api, Client, Resource,
    api::{Patch, PatchParams, PostParams},
    runtime::events::{Event, EventType},
};
use providers_shared::{
    api::{JobResult, PlanValues, Workspace, WorkspaceStatus},
    installer::{Action, EdgeObject, Kind, conditions, patch, state_of},
};

mod repair_request;
mod writes;

pub use writes::delete;
use writes::{create_in, create_learning, edge_client, edge_write, hub_write, learn};

use crate::{
    edge::EdgeView,
    edge::credential::{self, HubEndpoint},
    edge::helm_release,
    edge::runner_log,
    reconcile::observe::OwnedObservation,
    support::error::{Error, Result},
    support::event_recorder::EventRecorder,
    support::fault,
    support::metrics::{Metrics, ReasonLabels, ResultLabels},
    support::ownership::Shards,
    support::stop::Stop,
};
use providers_edge_watch::{Cached, grants as edge_grants};

/// What running a decision's actions came to.
pub struct Executed {
    /// The Workspace as the last of the actions' own writes left it, if one wrote it (also
    /// when a later action stopped short).
    pub written: Option<Workspace>,
    /// Whether every action ran (`Ok`), or where they stopped short.
    pub stopped: Result<(), Stop>,
}

/// What running the actions writes with: the hub, the hub endpoint a runner is given,
/// the metrics and Events it reports to, the edges this replica may write to, and how many
/// runner logs it keeps.
pub struct ExecuteHandles<'a> {
    pub hub: &'a Client,
    pub endpoint: &'a HubEndpoint,
    pub metrics: &'a Metrics,
    pub recorder: &'a EventRecorder,
    pub shards: &'a Shards,
    pub runner_log_history: usize,
}

/// Runs `actions` in order against the hub and `edge` (the pass hands it over: the edge's
/// client for writes and its caches, where each write is recorded as it is made), for the
/// Workspace of `observation`, stopping at the first that does not complete.
pub async fn execute(
    ctx: &ExecuteHandles<'_>,
    edge: &EdgeView,
    observation: &OwnedObservation,
    actions: &[Action],
) -> Executed {
    let mut status = observation.workspace.status.clone().unwrap_or_default();
    let mut written = None;
    for action in actions {
        // Fencing: checked before every write, so a replica that was paused past its
        // renew deadline stops here instead of writing after another took the edge over.
        if !ctx.shards.may_write(&observation.edge_name) {
            return Executed {
                written,
                stopped: Err(Stop::EdgeNotHeld {
                    edge: observation.edge_name.clone(),
                }),
            };
        }
        tracing::debug!(action = action.name(), "sending");
        match run(ctx, edge, observation, action, &mut status).await {
            Ok(Some(workspace)) => written = Some(workspace),
            Ok(None) => {}
            Err(stop) => {
                return Executed {
                    written,
                    stopped: Err(stop),
                };
            }
        }
        ctx.metrics
            .actions
            .get_or_create(&crate::support::metrics::ActionLabels {
                action: action.name().to_owned(),
            })
            .inc();
        tracing::debug!(action = action.name(), "done");
        fault::after(action.name());
    }
    Executed {
        written,
        stopped: Ok(()),
    }
}

async fn run(
    ctx: &ExecuteHandles<'_>,
    target: &EdgeView,
    observation: &OwnedObservation,
    action: &Action,
    status: &mut WorkspaceStatus,
) -> Result<Option<Workspace>, Stop> {
    let ws = &observation.workspace;
    let cache = target.cache.as_ref();
    let name = ws.metadata.name.clone().unwrap_or_default();
    let namespace = ws.metadata.namespace.clone().unwrap_or_default();
    let workspaces: Api<Workspace> = Api::namespaced(ctx.hub.clone(), &namespace);
    let params = PatchParams::default();
    let edge = observation.edge_name.as_str();
    match action {
        Action::AddFinalizer => {
            let finalizer = patch::add_finalizer(&state_of(ws));
            let written = workspaces
                .patch(&name, &params, &Patch::Json::<()>(finalizer))
                .await
                .map_err(|e| hub_write("add-finalizer", e))?;
            return Ok(Some(written));
        }
        Action::RemoveFinalizer => {
            if let Some(release) = patch::remove_finalizer(&state_of(ws)) {
                match workspaces
                    .patch(&name, &params, &Patch::Json::<()>(release))
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.is_not_found() => {}
                    Err(error) => return Err(hub_write("remove-finalizer", error)),
                }
            }
        }
        Action::WriteStatus(next) => {
            let uid = ws.metadata.uid.clone().unwrap_or_default();
            let status_patch =
                patch::write_status(&uid, next).map_err(|source| Error::Serialize {
                    what: "the Workspace status",
                    source,
                })?;
            let written = workspaces
                .patch_status(&name, &params, &Patch::Json::<()>(status_patch))
                .await
                .map_err(|e| hub_write("write-status", e))?;
            count_results(ctx, ws, status, next);
            *status = (**next).clone();
            return Ok(Some(written));
        }
        Action::Event(note) => {
            let event = Event {
                type_: if note.warning {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                reason: note.reason.to_owned(),
                note: Some(providers_shared::text::truncated(&note.message, 1000)),
                action: note.action.clone().unwrap_or_else(|| "Reconcile".into()),
                secondary: None,
            };
            // Events are best effort: a lost one never stops the installer.
            if let Err(error) = ctx.recorder.publish(&event, &ws.object_ref(&())).await {
                tracing::warn!(%error, reason = note.reason, "cannot publish an Event");
            }
        }
        Action::CreateHubServiceAccount(sa) => {
            create_in(ctx.hub, sa.as_ref())
                .await
                .map_err(|e| hub_write("create-hub-service-account", e))?;
        }
        Action::CreateHubRoleBinding(rb) => {
            create_in(ctx.hub, rb.as_ref())
                .await
                .map_err(|e| hub_write("create-hub-role-binding", e))?;
        }
        Action::OwnPlanValues(own) => {
            Api::<PlanValues>::namespaced(ctx.hub.clone(), &own.namespace)
                .patch(
                    &own.name,
                    &PatchParams::default(),
                    &Patch::<()>::Json(own.patch.clone()),
                )
                .await
                .map_err(|e| hub_write(action.name(), e))?;
        }
        Action::DeleteOnHub(deletion) => {
            let result = match deletion.kind {
                Kind::ServiceAccount => delete::<ServiceAccount>(ctx.hub, deletion).await,
                Kind::RoleBinding => delete::<RoleBinding>(ctx.hub, deletion).await,
                other => {
                    tracing::error!(kind = ?other, "the installer deletes only ServiceAccounts and RoleBindings on the hub");
                    Ok(())
                }
            };
            result.map_err(|e| hub_write(action.name(), e))?;
        }
        Action::MintRuntimeCredential(mint) => {
            let client = edge_client(edge, target)?;
            let kubeconfig = credential::mint(
                ctx.hub,
                ctx.endpoint,
                &mint.hub_namespace,
                &mint.service_account,
            )
            .await
            .map_err(Error::Hub)?;
            let mut secret = mint.secret.clone();
            secret.string_data = Some([("kubeconfig".to_owned(), kubeconfig)].into());
            let created = create_in(&client, &secret).await;
            let api = Api::namespaced(
                client.clone(),
                secret.metadata.namespace.as_deref().unwrap_or_default(),
            );
            let created = learn(cache, Cached::Attempt(Kind::Secret), api, &secret, created).await;
            created.map_err(|e| edge_write(edge, "mint-runtime-credential", e))?;
        }
        Action::CreateNamespace(ns) => {
            let api: Api<Namespace> = Api::all(edge_client(edge, target)?);
            let created = api.create(&PostParams::default(), ns).await;
            let created = learn(cache, Cached::Namespace, api, ns.as_ref(), created).await;
            created.map_err(|e| edge_write(edge, "create-namespace", e))?;
            // The installer's rights on Secrets there, before its first Secret write, bound
            // to who it is on the edge (asked once per credential).
            let name = ns.metadata.name.as_deref().unwrap_or_default();
            let client = edge_client(edge, target)?;
            let bound = match cache {
                Some(cache) => match cache.identity(&client).await {
                    Ok(user) => {
                        edge_grants::bind_as(&client, name, edge_grants::NAMESPACE_RIGHTS, &user)
                            .await
                    }
                    Err(error) => Err(error),
                },
                None => edge_grants::bind(&client, name, edge_grants::NAMESPACE_RIGHTS).await,
            };
            bound.map_err(|e| edge_write(edge, "grant-namespace-rights", e))?;
        }
        Action::PatchNamespace { name, patch, .. } => {
            let api: Api<Namespace> = Api::all(edge_client(edge, target)?);
            let patched = api
                .patch(name, &params, &Patch::Json::<()>(patch.clone()))
                .await
                .map_err(|e| edge_write(edge, action.name(), e))?;
            if let Some(cache) = cache {
                cache.wrote_object(Cached::Namespace, &patched);
            }
        }
        Action::Create(object) => {
            let client = edge_client(edge, target)?;
            let result = match &**object {
                EdgeObject::ServiceAccount(object) => create_learning(cache, &client, object).await,
                EdgeObject::Role(object) => create_learning(cache, &client, object).await,
                EdgeObject::RoleBinding(object) => create_learning(cache, &client, object).await,
                EdgeObject::Secret(object) => create_learning(cache, &client, object).await,
                EdgeObject::Job(object) => create_learning(cache, &client, object.as_ref()).await,
            };
            result.map_err(|e| edge_write(edge, action.name(), e))?;
            if matches!(**object, EdgeObject::Job(_)) {
                ctx.metrics.attempts_started.inc();
            }
        }
        Action::Delete(deletion) => {
            let client = edge_client(edge, target)?;
            let result = match deletion.kind {
                Kind::ServiceAccount => delete::<ServiceAccount>(&client, deletion).await,
                Kind::Role => delete::<Role>(&client, deletion).await,
                Kind::RoleBinding => delete::<RoleBinding>(&client, deletion).await,
                Kind::Secret => delete::<Secret>(&client, deletion).await,
                Kind::Job => delete::<Job>(&client, deletion).await,
            };
            result.map_err(|e| edge_write(edge, action.name(), e))?;
            if let Some(cache) = cache {
                cache.deleted(
                    Cached::Attempt(deletion.kind),
                    &deletion.namespace,
                    &deletion.name,
                    &deletion.uid,
                );
            }
        }
        Action::ReleaseJob {
            namespace,
            name,
            patch,
        } => {
            let api: Api<Job> = Api::namespaced(edge_client(edge, target)?, namespace);
            match api
                .patch(name, &params, &Patch::Json::<()>(patch.clone()))
                .await
            {
                Ok(job) => {
                    if let Some(cache) = cache {
                        cache.wrote_job(&job);
                    }
                }
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                Err(error) => return Err(edge_write(edge, "release-job", error)),
            }
        }
        Action::KeepRunnerLog(log) => {
            runner_log::keep(
                ctx.hub,
                ctx.runner_log_history,
                target.client.as_ref(),
                ws,
                log,
            )
            .await;
        }
        Action::MarkReleaseFailed {
            namespace,
            secret,
            uid,
            description,
            ..
        } => {
            let client = edge_client(edge, target)?;
            helm_release::mark_failed(edge, &client, namespace, secret, uid, description).await?;
        }
        Action::RequestRepair(request) => {
            return repair_request::request(ctx.recorder, &workspaces, &name, request).await;
        }
    }
    Ok(None)
}

/// Counts attempts that reached a result with this write, and drift found by it.
fn count_results(
    ctx: &ExecuteHandles<'_>,
    ws: &Workspace,
    before: &WorkspaceStatus,
    after: &WorkspaceStatus,
) {
    if let Some(drift) = &after.drift
        && before
            .drift
            .as_ref()
            .is_none_or(|d| d.record_uid != drift.record_uid || d.reason != drift.reason)
    {
        ctx.metrics
            .drift_found
            .get_or_create(&ReasonLabels {
                reason: drift.reason.clone(),
            })
            .inc();
    }
    let new = after.job_result.is_some()
        && (before.job_result.is_none() || before.attempt != after.attempt);
    if !new {
        return;
    }
    // From the seal of the plan whose result this is to now.
    if let (Some(result), Some(sealed_at)) = (
        after.job_result,
        ws.spec
            .plan
            .as_ref()
            .filter(|p| Some(p.plan.attempt) == after.attempt)
            .and_then(|p| p.plan.sealed_at.as_ref()),
    ) {
        let seconds = k8s_openapi::jiff::Timestamp::now()
            .duration_since(sealed_at.0)
            .as_secs_f64()
            .max(0.0);
        ctx.metrics
            .seal_to_result
            .get_or_create(&ResultLabels {
                result: format!("{result:?}"),
            })
            .observe(seconds);
    }
    match after.job_result {
        Some(JobResult::Succeeded) => {
            ctx.metrics.attempts_succeeded.inc();
        }
        Some(JobResult::Failed | JobResult::Rejected) => {
            let reason = conditions::recorded_failure(after)
                .map(|f| f.reason)
                .unwrap_or_else(|| "Unknown".into());
            ctx.metrics
                .attempts_failed
                .get_or_create(&ReasonLabels { reason })
                .inc();
        }
        None => {}
    }
}
