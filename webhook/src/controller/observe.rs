//! Reads what a decision needs: the seal check, the edge's state, and the attempt's
//! objects on the edge and the hub — fresh from the APIs, never from a watch cache.

use futures::try_join;
use k8s_openapi::{
    api::{
        batch::v1::Job,
        core::v1::{Namespace, Pod, Secret, ServiceAccount},
        rbac::v1::{Role, RoleBinding},
    },
    jiff::Timestamp,
};
use kube::{Api, Client, Resource, api::ListParams};
use providers::{
    api::{Plan, Workspace},
    installer::{
        self, Authorization, EdgeState, Focus, HubObjects, JobOutcome, Observed, Remote, SealCheck,
        job_state, names::CredentialNames, newest_revision, state_of,
    },
};
use serde::de::DeserializeOwned;

use crate::authz;

use super::{
    context::Context,
    error::{self, Error, Result},
    helm_release,
};

/// One observation of a Workspace.
pub struct Observation {
    pub workspace: Workspace,
    pub seal: SealCheck,
    pub edge_name: String,
    pub edge: EdgeState,
    pub client: Option<Client>,
    pub remote: Option<Remote>,
    pub hub: Option<HubObjects>,
    pub authorization: Authorization,
    pub now: Timestamp,
}

impl Observation {
    pub fn observed(&self) -> Observed<'_> {
        Observed {
            workspace: &self.workspace,
            seal: self.seal.clone(),
            edge: self.edge.clone(),
            remote: self.remote.clone(),
            hub: self.hub.clone(),
            authorization: self.authorization.clone(),
            now: self.now,
        }
    }
}

pub async fn observe(ctx: &Context, workspace: Workspace) -> Result<Observation> {
    let seal = ctx.keys.check(&workspace);
    let focus = installer::focus(&workspace);
    let edge_name = focus
        .as_ref()
        .map(|f| f.edge.clone())
        .or_else(|| {
            workspace
                .spec
                .plan
                .as_ref()
                .map(|p| p.plan.edge_name.clone())
        })
        .unwrap_or_else(|| workspace.spec.edge.clone());
    let (mut edge, client) = ctx.edges.lookup(&edge_name);
    let mut remote = None;
    if let (Some(focus), EdgeState::Ready(_), Some(client)) = (&focus, &edge, &client) {
        match read_remote(&edge_name, client, focus).await {
            Ok(objects) => remote = Some(objects),
            Err(Error::EdgeUnreachable { message, .. }) => edge = EdgeState::Unreachable(message),
            Err(other) => return Err(other),
        }
    }
    let hub = match focus.as_ref().and_then(|f| f.credential.as_ref()) {
        Some(names) => Some(read_hub(&ctx.hub, names).await?),
        None => None,
    };
    // Asked only when the next step may use the edge credential for the attempt.
    let authorization = match (&focus, &edge, workspace.spec.plan.as_ref()) {
        (Some(focus), EdgeState::Ready(_), Some(sealed)) if focus.authorize => {
            authorize(ctx, &sealed.plan).await
        }
        _ => Authorization::NotAsked,
    };
    Ok(Observation {
        workspace,
        seal,
        edge_name,
        edge,
        client,
        remote,
        hub,
        authorization,
        now: Timestamp::now(),
    })
}

/// RBAC's answer for the plan's owner, as sealed, on the plan's edge.
async fn authorize(ctx: &Context, plan: &Plan) -> Authorization {
    let user = authz::user_of(&plan.owner);
    match authz::can_install(&ctx.hub, &user, &plan.edge_name).await {
        Ok(true) => Authorization::Allowed,
        Ok(false) => Authorization::Denied(format!(
            "user {:?} may no longer install onto edge {:?}; the platform team grants the `install` verb on edges/{}",
            plan.owner.username, plan.edge_name, plan.edge_name
        )),
        Err(why) => Authorization::Unavailable(why),
    }
}

async fn get<K>(edge: &str, api: Api<K>, name: &str) -> Result<Option<K>>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.map_err(|e| error::edge(edge, e))
}

async fn read_remote(edge: &str, client: &Client, focus: &Focus) -> Result<Remote> {
    let ns = focus.namespace.as_str();
    let names = &focus.names;
    if focus.job_first {
        let job = get(edge, Api::<Job>::namespaced(client.clone(), ns), &names.job).await?;
        if let Some(job) = job.as_ref().map(job_state)
            && job.outcome == JobOutcome::Running
            && !job.object.deleting
        {
            return Ok(Remote {
                job: Some(job),
                ..Remote::default()
            });
        }
    }
    let credential = async {
        match &focus.credential {
            Some(c) => {
                get(
                    edge,
                    Api::<Secret>::namespaced(client.clone(), ns),
                    &c.edge_secret,
                )
                .await
            }
            None => Ok(None),
        }
    };
    let release = async {
        match &focus.release {
            Some(release) => helm_release::records(edge, client, ns, release).await,
            None => Ok(Vec::new()),
        }
    };
    let (namespace, service_account, role, role_binding, values, job, credential, release) = try_join!(
        get(edge, Api::<Namespace>::all(client.clone()), ns),
        get(
            edge,
            Api::<ServiceAccount>::namespaced(client.clone(), ns),
            &names.runner
        ),
        get(
            edge,
            Api::<Role>::namespaced(client.clone(), ns),
            &names.runner
        ),
        get(
            edge,
            Api::<RoleBinding>::namespaced(client.clone(), ns),
            &names.runner
        ),
        get(
            edge,
            Api::<Secret>::namespaced(client.clone(), ns),
            &names.values
        ),
        get(edge, Api::<Job>::namespaced(client.clone(), ns), &names.job),
        credential,
        release,
    )?;
    let mut job = job.as_ref().map(job_state);
    if let Some(job) = job.as_mut()
        && matches!(job.outcome, JobOutcome::Failed { .. })
    {
        // Helm's own words are in the runner Pod's termination message.
        job.runner = runner_of(edge, client, ns, &names.job).await?;
    }
    Ok(Remote {
        namespace: namespace.as_ref().map(state_of),
        service_account: service_account.as_ref().map(state_of),
        role: role.as_ref().map(state_of),
        role_binding: role_binding.as_ref().map(state_of),
        values: values.as_ref().map(state_of),
        job,
        runtime_credential: credential.as_ref().map(state_of),
        release: newest_revision(&release),
    })
}

/// The Pod the job controller made for the Job `job`, found by the label it sets.
async fn runner_of(
    edge: &str,
    client: &Client,
    namespace: &str,
    job: &str,
) -> Result<Option<installer::RunnerPod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let listed = pods
        .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
        .await
        .map_err(|e| error::edge(edge, e))?;
    Ok(installer::runner_pod(&listed.items))
}

async fn read_hub(hub: &Client, names: &CredentialNames) -> Result<HubObjects> {
    let sa: Api<ServiceAccount> = Api::namespaced(hub.clone(), &names.hub_namespace);
    let rb: Api<RoleBinding> = Api::namespaced(hub.clone(), &names.hub_namespace);
    let (service_account, role_binding) = try_join!(
        async { sa.get_opt(&names.service_account).await.map_err(Error::Hub) },
        async { rb.get_opt(&names.service_account).await.map_err(Error::Hub) },
    )?;
    Ok(HubObjects {
        service_account: service_account.as_ref().map(state_of),
        role_binding_role: role_binding.as_ref().map(|rb| rb.role_ref.name.clone()),
        role_binding: role_binding.as_ref().map(state_of),
    })
}
