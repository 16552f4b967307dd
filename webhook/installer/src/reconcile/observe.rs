//! Reads what a decision needs: the seal check, the edge's state, and the attempt's
//! objects on the edge (from the edge's watch caches and the installer's own writes) and on
//! the hub (the provider credential, read live while an attempt prepares). It only reads:
//! what the caches must hold or follow first is readied by the pass's step before it
//! (`reconcile::prepare`).

use futures::try_join;
use k8s_openapi::{
    api::{
        core::v1::{Pod, ServiceAccount},
        rbac::v1::RoleBinding,
    },
    jiff::Timestamp,
};
use kube::{Api, Client, api::ListParams};
use providers_shared::{
    api::{Plan, PlanValues, Workspace},
    installer::{
        self, AttemptReads, Authorization, EdgeObjects, EdgeState, HubObjects, JobOutcome, Kind,
        Observation, SealCheck, Settings, ValuesCheck, drift, names::CredentialNames, state_of,
    },
    plan_values::{self, Source},
};

use providers_runtime::authz;

use crate::{
    edge::EdgeView,
    edge::content_check::ContentReads,
    edge::helm_release,
    reconcile::contents::{self, InstalledObjects},
    reconcile::prepare::{InstalledRelease, Prepared, edge_of},
    reconcile::published_keys::Keys,
    support::error::{Error, Result},
    support::metrics::Metrics,
    support::stop::{self, Stop},
};
use providers_edge_watch::{Cached, EdgeCache, grants as edge_grants};

/// One pass's observation of a Workspace, owned: the core's [`Observation`], and the edge's name.
pub struct OwnedObservation {
    pub workspace: Workspace,
    pub seal: SealCheck,
    pub edge_name: String,
    pub edge: EdgeState,
    pub edge_objects: Option<EdgeObjects>,
    pub hub: Option<HubObjects>,
    pub authorization: Authorization,
    pub values: ValuesCheck,
    pub now: Timestamp,
}

impl OwnedObservation {
    pub fn as_observation(&self) -> Observation<'_> {
        Observation {
            workspace: &self.workspace,
            seal: self.seal.clone(),
            edge: self.edge.clone(),
            edge_objects: self.edge_objects.clone(),
            hub: self.hub.clone(),
            authorization: self.authorization.clone(),
            values: self.values.clone(),
            now: self.now,
        }
    }
}

/// What observing reads on the hub: the hub itself and the published sealing keys.
pub struct ObserveHandles<'a> {
    pub hub: &'a Client,
    pub keys: &'a Keys,
    pub settings: &'a Settings,
    pub metrics: &'a Metrics,
}

/// What the decision about `workspace` is taken from: the hub's objects, and `view`, the
/// Workspace's edge as the pass found it in the registry (its caches, and its client for
/// the few live reads), readied by the pass as `prepared` says. An edge that does not
/// answer is observed unreachable; any other failure stops the pass.
pub async fn observe(
    ctx: &ObserveHandles<'_>,
    view: &EdgeView,
    prepared: Prepared,
    workspace: Workspace,
) -> Result<OwnedObservation, Stop> {
    let seal = ctx.keys.check_seal(&workspace);
    let attempt_reads = installer::attempt_reads(&workspace);
    let edge_name = edge_of(&workspace);
    let mut edge = prepared.edge;
    let (client, cache) = (view.client.as_ref(), view.cache.as_ref());
    let mut edge_objects = None;
    if let (Some(attempt_reads), EdgeState::Ready(_), Some(client), Some(cache)) =
        (&attempt_reads, &edge, client, cache)
    {
        let reads = EdgeReads {
            edge: &edge_name,
            client,
            cache,
        };
        let read = match prepared.installed {
            Some(installed) if attempt_reads.installed => {
                read_installed(&reads, attempt_reads, &workspace, installed, ctx).await
            }
            _ => read_edge_objects(&reads, attempt_reads, &workspace).await,
        };
        match read {
            Ok(objects) => edge_objects = Some(objects),
            Err(Stop::EdgeDown { message, .. }) => edge = EdgeState::Unreachable(message),
            Err(other) => return Err(other),
        }
    }
    let hub = match attempt_reads.as_ref().and_then(|f| f.credential.as_ref()) {
        Some(names) => Some(read_hub(ctx.hub, names).await?),
        None => None,
    };
    // Asked only when the next step may use the edge credential for the attempt.
    let authorization = match (&attempt_reads, &edge, workspace.spec.plan.as_ref()) {
        (Some(attempt_reads), EdgeState::Ready(_), Some(sealed)) if attempt_reads.authorize => {
            authorize(ctx.hub, &sealed.plan).await
        }
        _ => Authorization::NotAsked,
    };
    // Read while the attempt prepares, and to name what a release made outside the
    // installer changed in them.
    let described = edge_objects
        .as_ref()
        .is_some_and(|r| r.release_content.is_some());
    let values = match workspace.spec.plan.as_ref() {
        Some(sealed) if attempt_reads.as_ref().is_some_and(|f| f.values.is_some()) || described => {
            read_values(ctx.hub, &workspace, &sealed.plan).await
        }
        _ => ValuesCheck::NotRead,
    };
    Ok(OwnedObservation {
        workspace,
        seal,
        edge_name,
        edge,
        edge_objects,
        hub,
        authorization,
        values,
        now: Timestamp::now(),
    })
}

/// The plan's values from the PlanValues object its digest names, checked against that
/// digest. Read live: the objects are large and read once or twice per attempt, so no
/// cache holds them.
async fn read_values(hub: &Client, workspace: &Workspace, plan: &Plan) -> ValuesCheck {
    let Source::Stored { digest } = plan_values::source_of(plan) else {
        return ValuesCheck::NotRead;
    };
    let name = plan_values::object_name(&plan.workspace.name, digest);
    let namespace = workspace.metadata.namespace.as_deref().unwrap_or_default();
    let api = Api::<PlanValues>::namespaced(hub.clone(), namespace);
    match api.get_opt(&name).await {
        Err(error) => ValuesCheck::Unavailable(error.to_string()),
        Ok(None) => ValuesCheck::Missing { name },
        Ok(Some(stored)) => match plan_values::decode(&stored.spec, digest) {
            Ok(values) => ValuesCheck::Verified {
                values: std::sync::Arc::new(values),
                uid: stored.metadata.uid.clone().unwrap_or_default(),
                owners: stored
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .map(|owner| owner.uid.clone())
                    .collect(),
                labeled: stored.metadata.labels.is_some(),
            },
            Err(defect) => ValuesCheck::Defective { name, defect },
        },
    }
}

/// RBAC's answer for the plan's owner, as sealed: `install` on the plan's edge and `use`
/// of its Recipe, both still granted now.
async fn authorize(hub: &Client, plan: &Plan) -> Authorization {
    let user = authz::user_of(&plan.owner);
    let (may_install, may_use) = tokio::join!(
        authz::can_install(hub, &user, &plan.edge_name),
        authz::can_use_recipe(hub, &user, &plan.provider),
    );
    Authorization::of_owner(plan, authz::reason(may_install), authz::reason(may_use))
}

/// One edge's client and caches, for one reconcile's reads.
#[derive(Clone, Copy)]
struct EdgeReads<'a> {
    edge: &'a str,
    client: &'a Client,
    cache: &'a EdgeCache,
}

/// The attempt's objects on the edge, from the caches; only a failed Job's runner Pod is
/// read live (its termination message is helm's own words, needed once).
async fn read_edge_objects(
    reads: &EdgeReads<'_>,
    attempt_reads: &AttemptReads,
    workspace: &Workspace,
) -> Result<EdgeObjects, Stop> {
    let EdgeReads {
        edge,
        client,
        cache,
    } = *reads;
    let ns = attempt_reads.namespace.as_str();
    let names = &attempt_reads.names;
    if attempt_reads.installed {
        // Prepared with no release to follow: nothing of it to read.
        return Ok(EdgeObjects::default());
    }
    let object = |kind: Kind, name: &str| cache.object(Cached::Attempt(kind), ns, name);
    let mut job = cache.job(ns, &names.job);
    if attempt_reads.job_first
        && job
            .as_ref()
            .is_some_and(|j| j.outcome == JobOutcome::Running && !j.object.deleting)
    {
        return Ok(EdgeObjects {
            job,
            ..EdgeObjects::default()
        });
    }
    // Helm's own words are in the runner Pod's termination message, read for the pass that
    // records the failure (and keeps the runner's log); once it is recorded, no pass needs
    // them.
    let recorded = workspace
        .status
        .as_ref()
        .is_some_and(|status| status.job_result.is_some());
    if let Some(job) = job.as_mut()
        && matches!(job.outcome, JobOutcome::Failed { .. })
        && !recorded
    {
        job.runner = runner_of(edge, client, ns, &names.job).await?;
    }
    Ok(EdgeObjects {
        namespace: cache.object(Cached::Namespace, "", ns),
        service_account: object(Kind::ServiceAccount, &names.runner),
        role: object(Kind::Role, &names.runner),
        role_binding: object(Kind::RoleBinding, &names.runner),
        values: object(Kind::Secret, &names.values),
        job,
        // The cleanup and the deletion remove them: one Job per attempt would otherwise
        // stay for the Workspace's life, and a Workspace created later under the same name
        // makes Jobs of the same names.
        earlier_jobs: cache.jobs_of(
            ns,
            workspace.metadata.uid.as_deref().unwrap_or_default(),
            &names.job,
        ),
        runtime_credential: attempt_reads
            .credential
            .as_ref()
            .and_then(|c| object(Kind::Secret, &c.edge_secret)),
        release: attempt_reads
            .release
            .as_ref()
            .and_then(|release| cache.release_revision(ns, release, None)),
        release_content: None,
        objects: None,
        contents: None,
    })
}

/// An installed attempt's release, for drift, as the pass prepared it: its newest
/// revision, what the edge shows of the installed revision's objects, and, for a revision
/// the installer did not make and has not described yet, what it installs (one live read
/// of its record).
async fn read_installed(
    reads: &EdgeReads<'_>,
    attempt_reads: &AttemptReads,
    workspace: &Workspace,
    installed: InstalledRelease,
    ctx: &ObserveHandles<'_>,
) -> Result<EdgeObjects, Stop> {
    let ns = attempt_reads.namespace.as_str();
    let status = workspace.status.clone().unwrap_or_default();
    let release_content = match &installed.newest {
        Some(revision) if drift::needs_content(&status, revision) => {
            helm_release::content(reads.edge, reads.client, ns, &revision.secret).await?
        }
        _ => None,
    };
    let objects = installed
        .followed
        .as_ref()
        .map(|followed| installer::ReleaseObjects {
            objects: reads
                .cache
                .seen_objects(ns, &followed.objects, &followed.unfollowed),
            record_uid: followed.record_uid.clone(),
        });
    let contents = match (&installed.newest, &installed.followed, &objects) {
        (Some(revision), Some(followed), Some(seen)) if revision.uid == followed.record_uid => {
            let installed = InstalledObjects {
                revision,
                followed,
                seen: &seen.objects,
            };
            let reads = ContentReads {
                edge: reads.edge,
                client: reads.client,
                cache: reads.cache,
                namespace: ns,
            };
            contents::when_due(
                &reads,
                &status,
                workspace,
                installed,
                ctx.settings,
                ctx.metrics,
            )
            .await?
        }
        _ => None,
    };
    Ok(EdgeObjects {
        release: installed.newest,
        release_content,
        objects,
        contents,
        ..EdgeObjects::default()
    })
}

/// The Pod the job controller made for the Job `job`, found by the label it sets.
async fn runner_of(
    edge: &str,
    client: &Client,
    namespace: &str,
    job: &str,
) -> Result<Option<installer::RunnerPod>, Stop> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let selector = ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}"));
    let listed = edge_grants::with_grant(client, namespace, edge_grants::RUNNER_LOGS, || {
        pods.list(&selector)
    })
    .await
    .map_err(|e| stop::edge_failure(edge, e))?;
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
