//! Runs a decision's actions in order, stopping at the first that fails. Every write is
//! guarded: Workspace writes test its UID, edge deletions carry UID preconditions, and a
//! create that finds the object already there stops the pass so the next one observes it.

use std::fmt::Debug;

use k8s_openapi::{
    NamespaceResourceScope,
    api::{
        batch::v1::Job,
        core::v1::{Namespace, Secret, ServiceAccount},
        rbac::v1::{Role, RoleBinding},
    },
};
use kube::{
    Api, Client, Resource,
    api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy},
    runtime::events::{Event, EventType},
};
use providers::{
    api::{JobResult, Workspace, WorkspaceStatus},
    installer::{Action, Deletion, EdgeObject, Kind, conditions, patch, state_of},
};
use serde::{Serialize, de::DeserializeOwned};

use super::{
    context::Context,
    credential,
    error::{self, Error, Result},
    fault, helm_release,
    metrics::ReasonLabels,
    observe::Observation,
    runner_log,
};

pub async fn execute(ctx: &Context, observation: &Observation, actions: &[Action]) -> Result<()> {
    let mut status = observation.workspace.status.clone().unwrap_or_default();
    for action in actions {
        run(ctx, observation, action, &mut status).await?;
        ctx.metrics
            .actions
            .get_or_create(&super::metrics::ActionLabels {
                action: action.name().to_owned(),
            })
            .inc();
        tracing::debug!(
            workspace = %key(&observation.workspace),
            action = action.name(),
            "done"
        );
        fault::after(action.name());
    }
    Ok(())
}

fn key(workspace: &Workspace) -> String {
    format!(
        "{}/{}",
        workspace.metadata.namespace.as_deref().unwrap_or_default(),
        workspace.metadata.name.as_deref().unwrap_or_default()
    )
}

/// A write that found the state changed: decide again from a fresh observation.
fn interrupted(action: &'static str, status: &kube::core::Status) -> Error {
    Error::Interrupted {
        action,
        message: status.message.clone(),
    }
}

/// Maps a hub write error: a failed guard or a conflict interrupts the pass.
fn hub_write(action: &'static str, error: kube::Error) -> Error {
    match error {
        kube::Error::Api(status)
            if status.is_conflict() || status.is_already_exists() || is_failed_test(&status) =>
        {
            interrupted(action, &status)
        }
        other => Error::Hub(other),
    }
}

/// Maps an edge write error the same way.
fn edge_write(edge: &str, action: &'static str, error: kube::Error) -> Error {
    match error {
        kube::Error::Api(status)
            if status.is_conflict() || status.is_already_exists() || is_failed_test(&status) =>
        {
            interrupted(action, &status)
        }
        other => error::edge(edge, other),
    }
}

/// A JSON patch whose `test` operation failed: the object is not the one observed.
fn is_failed_test(status: &kube::core::Status) -> bool {
    status.code == 422
        && status.message == "the server rejected our request due to an error in our request"
}

async fn run(
    ctx: &Context,
    o: &Observation,
    action: &Action,
    status: &mut WorkspaceStatus,
) -> Result<()> {
    let ws = &o.workspace;
    let name = ws.metadata.name.clone().unwrap_or_default();
    let namespace = ws.metadata.namespace.clone().unwrap_or_default();
    let workspaces: Api<Workspace> = Api::namespaced(ctx.hub.clone(), &namespace);
    let params = PatchParams::default();
    let edge = o.edge_name.as_str();
    match action {
        Action::AddFinalizer => {
            let p = patch::add_finalizer(&state_of(ws));
            workspaces
                .patch(&name, &params, &Patch::Json::<()>(p))
                .await
                .map_err(|e| hub_write("add-finalizer", e))?;
        }
        Action::RemoveFinalizer => {
            if let Some(p) = patch::remove_finalizer(&state_of(ws)) {
                match workspaces
                    .patch(&name, &params, &Patch::Json::<()>(p))
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.is_not_found() => {}
                    Err(e) => return Err(hub_write("remove-finalizer", e)),
                }
            }
        }
        Action::WriteStatus(next) => {
            let uid = ws.metadata.uid.clone().unwrap_or_default();
            let p = patch::write_status(&uid, next).map_err(|source| Error::Serialize {
                what: "the Workspace status",
                source,
            })?;
            workspaces
                .patch_status(&name, &params, &Patch::Json::<()>(p))
                .await
                .map_err(|e| hub_write("write-status", e))?;
            count_results(ctx, status, next);
            *status = (**next).clone();
        }
        Action::Event(note) => {
            let event = Event {
                type_: if note.warning {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                reason: note.reason.to_owned(),
                note: Some(truncate(&note.message, 1000)),
                action: "Reconcile".into(),
                secondary: None,
            };
            // Events are best effort: a lost one never stops the installer.
            if let Err(error) = ctx.recorder.publish(&event, &ws.object_ref(&())).await {
                tracing::warn!(%error, reason = note.reason, "cannot publish an Event");
            }
        }
        Action::CreateHubServiceAccount(sa) => {
            create_in(&ctx.hub, sa.as_ref())
                .await
                .map_err(|e| hub_write("create-hub-service-account", e))?;
        }
        Action::CreateHubRoleBinding(rb) => {
            create_in(&ctx.hub, rb.as_ref())
                .await
                .map_err(|e| hub_write("create-hub-role-binding", e))?;
        }
        Action::DeleteOnHub(deletion) => {
            let result = match deletion.kind {
                Kind::ServiceAccount => delete::<ServiceAccount>(&ctx.hub, deletion).await,
                Kind::RoleBinding => delete::<RoleBinding>(&ctx.hub, deletion).await,
                other => {
                    tracing::error!(kind = ?other, "the installer deletes only ServiceAccounts and RoleBindings on the hub");
                    Ok(())
                }
            };
            result.map_err(|e| hub_write(action.name(), e))?;
        }
        Action::MintRuntimeCredential(mint) => {
            let client = edge_client(o)?;
            let kubeconfig = credential::mint(
                &ctx.hub,
                &ctx.endpoint,
                &mint.hub_namespace,
                &mint.service_account,
            )
            .await
            .map_err(Error::Hub)?;
            let mut secret = mint.secret.clone();
            secret.string_data = Some([("kubeconfig".to_owned(), kubeconfig)].into());
            create_in(&client, &secret)
                .await
                .map_err(|e| edge_write(edge, "mint-runtime-credential", e))?;
        }
        Action::CreateNamespace(ns) => {
            let api: Api<Namespace> = Api::all(edge_client(o)?);
            api.create(&PostParams::default(), ns)
                .await
                .map_err(|e| edge_write(edge, "create-namespace", e))?;
        }
        Action::PatchNamespace { name, patch, .. } => {
            let api: Api<Namespace> = Api::all(edge_client(o)?);
            api.patch(name, &params, &Patch::Json::<()>(patch.clone()))
                .await
                .map_err(|e| edge_write(edge, action.name(), e))?;
        }
        Action::Create(object) => {
            let client = edge_client(o)?;
            let result = match &**object {
                EdgeObject::ServiceAccount(x) => create_in(&client, x).await,
                EdgeObject::Role(x) => create_in(&client, x).await,
                EdgeObject::RoleBinding(x) => create_in(&client, x).await,
                EdgeObject::Secret(x) => create_in(&client, x).await,
                EdgeObject::Job(x) => create_in(&client, x.as_ref()).await,
            };
            result.map_err(|e| edge_write(edge, action.name(), e))?;
            if matches!(**object, EdgeObject::Job(_)) {
                ctx.metrics.attempts_started.inc();
            }
        }
        Action::Delete(deletion) => {
            let client = edge_client(o)?;
            let result = match deletion.kind {
                Kind::ServiceAccount => delete::<ServiceAccount>(&client, deletion).await,
                Kind::Role => delete::<Role>(&client, deletion).await,
                Kind::RoleBinding => delete::<RoleBinding>(&client, deletion).await,
                Kind::Secret => delete::<Secret>(&client, deletion).await,
                Kind::Job => delete::<Job>(&client, deletion).await,
            };
            result.map_err(|e| edge_write(edge, action.name(), e))?;
        }
        Action::ReleaseJob {
            namespace,
            name,
            patch,
        } => {
            let api: Api<Job> = Api::namespaced(edge_client(o)?, namespace);
            match api
                .patch(name, &params, &Patch::Json::<()>(patch.clone()))
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                Err(e) => return Err(edge_write(edge, "release-job", e)),
            }
        }
        Action::KeepRunnerLog(log) => {
            runner_log::keep(ctx, o.client.as_ref(), ws, log).await;
        }
        Action::MarkReleaseFailed {
            namespace,
            secret,
            uid,
            description,
            ..
        } => {
            let client = edge_client(o)?;
            helm_release::mark_failed(edge, &client, namespace, secret, uid, description).await?;
        }
    }
    Ok(())
}

fn edge_client(o: &Observation) -> Result<Client> {
    o.client.clone().ok_or_else(|| Error::EdgeUnreachable {
        edge: o.edge_name.clone(),
        message: "no client for the edge".into(),
    })
}

async fn create_in<K>(client: &Client, object: &K) -> Result<(), kube::Error>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug,
{
    let namespace = object.meta().namespace.clone().unwrap_or_default();
    let api: Api<K> = Api::namespaced(client.clone(), &namespace);
    api.create(&PostParams::default(), object).await.map(|_| ())
}

pub async fn delete<K>(client: &Client, deletion: &Deletion) -> Result<(), kube::Error>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), &deletion.namespace);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(deletion.uid.clone()),
            resource_version: None,
        }),
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    match api.delete(&deletion.name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Counts attempts that reached a result with this write.
fn count_results(ctx: &Context, before: &WorkspaceStatus, after: &WorkspaceStatus) {
    let new = after.job_result.is_some()
        && (before.job_result.is_none() || before.attempt != after.attempt);
    if !new {
        return;
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

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
