//! The installer controller on a hub and an edge control plane: what a sealed attempt
//! creates, runs and cleans up, and how it refuses what it must not run.
//!
//! The real `providers-webhook controller` runs as a process per test (each test's
//! Workspaces carry a label its controller selects); the job runner plays the kubelet and
//! runs the Jobs with the real helm against the chart repository on 127.0.0.1.

use std::{path::Path, sync::Arc, time::Duration};

use anyhow::{Context, ensure};
use futures::StreamExt;
use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{ConfigMap, Namespace, Secret, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ListParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use providers_shared::{
    api::{JobResult, Phase, Plan, RuntimeCredential, Workspace},
    installer::names,
};
use providers_tests::installer::{
    self, ControllerOptions, ControllerProcess, Environment, Options, PlanSpec, eventually,
    has_condition, status_of, wait_workspace, workspace,
};
use serde_json::json;
use tokio::sync::Mutex;

const WAIT: Duration = Duration::from_secs(90);

async fn env() -> anyhow::Result<&'static Environment> {
    installer::environment(
        Path::new(env!("CARGO_BIN_EXE_providers-controlplane")),
        Options::default(),
    )
    .await
}

async fn controller(env: &Environment, case: &str) -> anyhow::Result<ControllerProcess> {
    env.controller(ControllerOptions::new(
        case,
        &format!("{case}-0"),
        &format!("lease-{case}"),
    ))
    .await
}

/// An install runs the sealed plan and records its result before it revokes the identity:
/// the namespace, the identity, and a Job carrying the pinned chart, version and values;
/// Progressing; a real Helm release with the pinned values; then the result in status
/// before the identity disappears, the Job released after that, cleanedUp, Ready. The
/// provider's runtime credential is minted and stays.
#[tokio::test]
async fn sealed_workspace_installs_the_pinned_chart_for_real() -> anyhow::Result<()> {
    let case = "install";
    let env = env().await?;
    let install = Install::prepare(env, case).await?;
    let order = OrderWatch::start(&install);

    let controller = controller(env, case).await?;
    let created = env
        .create_workspace(&install.hub, &install.spec, install.plan.clone())
        .await?;

    let job = step_prepare_then_job(&install, &created).await?;
    step_identity_and_values_on_the_edge(&install, &created).await?;
    step_progressing_while_the_job_runs(&install, &job).await?;
    let done = step_ready_after_the_run(&install).await?;
    let credential = step_release_with_the_pinned_values(&install).await?;
    step_identity_gone_job_released_credential_stays(&install, &credential).await?;
    step_events_of_the_attempt(&install, &done).await?;
    step_result_before_revocation(order).await?;
    step_least_privilege(&controller)?;
    Ok(())
}

/// What the steps of the install test share: the clients, the sealed plan and the names
/// of what the attempt creates on the edge.
struct Install {
    hub: Client,
    edge: Client,
    namespace: &'static str,
    spec: PlanSpec,
    plan: Plan,
    job_name: String,
    runner_name: String,
    jobs: Api<Job>,
    env: &'static Environment,
}

impl Install {
    /// The plan (pinned values, a runtime credential), the Recipe's Role on the hub, and
    /// the runner holding the attempt's Job until released.
    async fn prepare(env: &'static Environment, case: &str) -> anyhow::Result<Self> {
        let hub = env.hub_admin().await?;
        let edge = env.edge_admin().await?;
        let namespace = "inst-hello";
        let mut spec = PlanSpec::hello(case, "org-a", "install-demo", namespace);
        spec.values = json!({"greeting": "pinned at sealing"});
        spec.runtime_credential = Some(RuntimeCredential {
            role: "provider-runtime".into(),
            value_path: "hub.credentialSecret".into(),
        });
        let role: Role = serde_json::from_value(json!({
            "metadata": {"name": "provider-runtime", "namespace": "org-a"},
            "rules": [{"apiGroups": ["providers.platform.dev"], "resources": ["workspaces"], "verbs": ["get", "list"]}],
        }))?;
        Api::<Role>::namespaced(hub.clone(), "org-a")
            .create(&PostParams::default(), &role)
            .await?;
        let plan = env.plan(&spec, 1, "");
        let job_name = plan.job.clone();
        let runner_name = names::AttemptNames::for_job(&job_name).runner;
        env.runner.hold(&job_name);
        Ok(Self {
            jobs: Api::namespaced(edge.clone(), namespace),
            hub,
            edge,
            namespace,
            spec,
            plan,
            job_name,
            runner_name,
            env,
        })
    }
}

/// Order evidence, gathered while it happens: when the runner's ServiceAccount is
/// deleted, the result must already be in status; when the Job loses its finalizer, the
/// ServiceAccount must already be gone.
struct OrderWatch {
    evidence: Arc<Mutex<Vec<String>>>,
    watch_sa: tokio::task::JoinHandle<()>,
    watch_job: tokio::task::JoinHandle<()>,
}

impl OrderWatch {
    fn start(install: &Install) -> Self {
        let namespace = install.namespace;
        let evidence = Arc::new(Mutex::new(Vec::<String>::new()));
        let watch_sa = {
            let (edge, hub, evidence, runner) = (
                install.edge.clone(),
                install.hub.clone(),
                evidence.clone(),
                install.runner_name.clone(),
            );
            tokio::spawn(async move {
                let api: Api<ServiceAccount> = Api::namespaced(edge, namespace);
                let config = watcher::Config::default().fields(&format!("metadata.name={runner}"));
                let mut events = watcher(api, config).boxed();
                while let Some(Ok(event)) = events.next().await {
                    if let watcher::Event::Delete(_) = event {
                        let ws = workspace(&hub, "org-a", "install-demo").await;
                        let result = ws.ok().and_then(|w| w.status).and_then(|s| s.job_result);
                        evidence
                            .lock()
                            .await
                            .push(format!("sa-deleted result={result:?}"));
                    }
                }
            })
        };
        let watch_job = {
            let (edge, evidence, job, runner) = (
                install.edge.clone(),
                evidence.clone(),
                install.job_name.clone(),
                install.runner_name.clone(),
            );
            tokio::spawn(async move {
                let jobs: Api<Job> = Api::namespaced(edge.clone(), namespace);
                let accounts: Api<ServiceAccount> = Api::namespaced(edge, namespace);
                let config = watcher::Config::default().fields(&format!("metadata.name={job}"));
                let mut events = watcher(jobs, config).applied_objects().boxed();
                let mut had = false;
                while let Some(Ok(job)) = events.next().await {
                    let has = job.finalizers().iter().any(|f| f == names::FINALIZER);
                    if had && !has {
                        let sa = accounts.get_opt(&runner).await.ok().flatten();
                        evidence
                            .lock()
                            .await
                            .push(format!("finalizer-released sa-present={}", sa.is_some()));
                    }
                    had = has;
                }
            })
        };
        Self {
            evidence,
            watch_sa,
            watch_job,
        }
    }
}

/// The attempt's Job appears (held by the runner) with the Workspace's UID, attempt and
/// preparation labels and the installer's finalizer, and runs the pinned argument vector
/// with helm itself (no shell), as the attempt's account, once, within the deadline.
async fn step_prepare_then_job(install: &Install, created: &Workspace) -> anyhow::Result<Job> {
    let Install {
        plan,
        job_name,
        runner_name,
        jobs,
        namespace,
        ..
    } = install;
    let job = eventually("the attempt's Job", WAIT, || async {
        Ok(jobs.get_opt(job_name).await?)
    })
    .await?;
    let uid = created.uid().context("uid")?;
    let labels = job.labels();
    ensure!(
        labels.get(names::LABEL_WORKSPACE_UID) == Some(&uid),
        "workspace label: {labels:?}"
    );
    ensure!(
        labels.get(names::LABEL_ATTEMPT_ID) == Some(&plan.attempt_id),
        "attempt label: {labels:?}"
    );
    ensure!(
        labels.contains_key(names::LABEL_PREPARATION_ID),
        "preparation label: {labels:?}"
    );
    ensure!(
        job.finalizers().contains(&names::FINALIZER.to_owned()),
        "finalizer"
    );
    let job_spec = job.spec.clone().context("spec")?;
    ensure!(job_spec.backoff_limit == Some(0), "backoffLimit 0");
    ensure!(
        job_spec.active_deadline_seconds == Some(120),
        "the configured deadline"
    );
    let pod = job_spec.template.spec.context("pod")?;
    ensure!(
        pod.service_account_name.as_deref() == Some(runner_name.as_str()),
        "the attempt's account"
    );
    let container = &pod.containers[0];
    let args = container.args.clone().context("args")?;
    let expected = [
        "upgrade".to_owned(),
        "--install".to_owned(),
        format!("--repo={}", install.env.repo.url),
        "--version=0.1.0".to_owned(),
        format!("--namespace={namespace}"),
        "--values=/etc/providers/values/values.yaml".to_owned(),
    ];
    ensure!(args[..6] == expected, "pinned argument vector: {args:?}");
    ensure!(
        args[args.len() - 3..] == ["--", "hello", "hello"],
        "release and chart after --: {args:?}"
    );
    ensure!(
        container.command.as_deref() == Some(&["helm".to_owned()][..]),
        "no shell: {:?}",
        container.command
    );
    Ok(job)
}

/// Before the Job runs, the namespace is the Workspace's, the runner's ServiceAccount, Role
/// and RoleBinding exist with rules scoped to what the plan allows, and the sealed values
/// ride in the Job's Pod template: no values Secret.
async fn step_identity_and_values_on_the_edge(
    install: &Install,
    created: &Workspace,
) -> anyhow::Result<()> {
    let Install {
        edge,
        namespace,
        plan,
        job_name,
        runner_name,
        jobs,
        ..
    } = install;
    let namespace = *namespace;
    let uid = created.uid().context("uid")?;
    let ns = Api::<Namespace>::all(edge.clone()).get(namespace).await?;
    ensure!(
        ns.labels().get(names::LABEL_WORKSPACE_UID) == Some(&uid),
        "namespace owned by the Workspace"
    );
    for api in [
        Api::<ServiceAccount>::namespaced(edge.clone(), namespace)
            .get_opt(runner_name)
            .await?
            .map(|_| ()),
        Api::<Role>::namespaced(edge.clone(), namespace)
            .get_opt(runner_name)
            .await?
            .map(|_| ()),
        Api::<RoleBinding>::namespaced(edge.clone(), namespace)
            .get_opt(runner_name)
            .await?
            .map(|_| ()),
    ] {
        ensure!(api.is_some(), "the runner's identity exists");
    }
    let role = Api::<Role>::namespaced(edge.clone(), namespace)
        .get(runner_name)
        .await?;
    let rules = serde_json::to_string(&role.rules)?;
    ensure!(
        rules.contains("configmaps") && rules.contains("secrets"),
        "scoped rules: {rules}"
    );
    // The sealed values ride in the Job's Pod template, projected as values.yaml: no
    // values Secret to create and delete.
    let text = jobs
        .get(job_name)
        .await?
        .spec
        .and_then(|s| s.template.metadata)
        .and_then(|m| m.annotations)
        .and_then(|a| a.get(names::ANNOTATION_VALUES).cloned())
        .context("the values annotation")?;
    let sealed_values: serde_json::Value = serde_json::from_str(&text)?;
    ensure!(
        plan.values.as_ref() == Some(&sealed_values),
        "the Job holds the sealed values: {sealed_values}"
    );
    ensure!(
        Api::<Secret>::namespaced(edge.clone(), namespace)
            .get_opt(&names::AttemptNames::for_job(job_name).values)
            .await?
            .is_none(),
        "no values Secret"
    );
    Ok(())
}

/// While the Job runs, the Workspace is Progressing (JobRunning) and records the Job's UID.
async fn step_progressing_while_the_job_runs(install: &Install, job: &Job) -> anyhow::Result<()> {
    let progressing = wait_workspace(&install.hub, "org-a", "install-demo", "Progressing", |ws| {
        has_condition(ws, "Progressing", "True", "JobRunning")
    })
    .await?;
    ensure!(status_of(&progressing).phase == Some(Phase::Progressing));
    ensure!(
        status_of(&progressing).job_uid == job.uid(),
        "the Job's UID is recorded"
    );
    Ok(())
}

/// Run for real, the attempt ends cleaned up and Ready: Succeeded, with its finish time and
/// one attempt record. Returns the Workspace as it then is.
async fn step_ready_after_the_run(install: &Install) -> anyhow::Result<Workspace> {
    install.env.runner.release(&install.job_name);
    let done = wait_workspace(&install.hub, "org-a", "install-demo", "Ready", |ws| {
        status_of(ws).cleaned_up && has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    let status = status_of(&done);
    ensure!(status.job_result == Some(JobResult::Succeeded));
    ensure!(status.finished_at.is_some());
    ensure!(status.phase == Some(Phase::Succeeded));
    ensure!(status.attempts.len() == 1 && status.attempts[0].result == Some(JobResult::Succeeded));
    // The installer says who it is, so the status's field manager is named, not `unknown`.
    let status_managers: Vec<&str> = done
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.subresource.as_deref() == Some("status"))
        .filter_map(|entry| entry.manager.as_deref())
        .collect();
    ensure!(
        status_managers == ["providers-installer"],
        "the status is managed by {status_managers:?}"
    );
    Ok(done)
}

/// The runner ran helm, which exited 0, and left a deployed release whose objects carry the
/// pinned values and the runtime credential's name. Returns that credential's Secret name.
async fn step_release_with_the_pinned_values(install: &Install) -> anyhow::Result<String> {
    let Install {
        edge,
        namespace,
        job_name,
        ..
    } = install;
    let namespace = *namespace;
    let run = install
        .env
        .runner
        .run(namespace, job_name)
        .context("the runner ran the Job")?;
    ensure!(run.exit == Some(0), "helm exited 0: {}", run.output);
    let release = Api::<Secret>::namespaced(edge.clone(), namespace)
        .get("sh.helm.release.v1.hello.v1")
        .await?;
    ensure!(
        release.labels().get("status").map(String::as_str) == Some("deployed"),
        "release deployed"
    );
    let config = Api::<ConfigMap>::namespaced(edge.clone(), namespace)
        .get("hello-greeting")
        .await?;
    let data = config.data.context("data")?;
    ensure!(
        data["greeting"] == "pinned at sealing",
        "pinned values: {data:?}"
    );
    ensure!(data["chartVersion"] == "0.1.0");
    let credential = providers_shared::plan::runtime_credential_secret("install-demo");
    ensure!(
        data["credentialSecret"] == credential,
        "the chart got the credential's name"
    );
    Ok(credential)
}

/// After the attempt, the runner's identity is gone; the Job stays, released; the runtime
/// credential stays and works against the hub with the Recipe's Role.
async fn step_identity_gone_job_released_credential_stays(
    install: &Install,
    credential: &str,
) -> anyhow::Result<()> {
    let Install {
        edge,
        namespace,
        job_name,
        runner_name,
        jobs,
        ..
    } = install;
    let namespace = *namespace;
    ensure!(
        Api::<ServiceAccount>::namespaced(edge.clone(), namespace)
            .get_opt(runner_name)
            .await?
            .is_none()
    );
    ensure!(
        Api::<Role>::namespaced(edge.clone(), namespace)
            .get_opt(runner_name)
            .await?
            .is_none()
    );
    ensure!(
        Api::<RoleBinding>::namespaced(edge.clone(), namespace)
            .get_opt(runner_name)
            .await?
            .is_none()
    );
    ensure!(
        Api::<Secret>::namespaced(edge.clone(), namespace)
            .get_opt(&names::AttemptNames::for_job(job_name).values)
            .await?
            .is_none()
    );
    let job = jobs.get(job_name).await?;
    ensure!(
        !job.finalizers().contains(&names::FINALIZER.to_owned()),
        "the Job is released"
    );
    let secret = Api::<Secret>::namespaced(edge.clone(), namespace)
        .get(credential)
        .await?;
    let kubeconfig = secret
        .data
        .context("data")?
        .get("kubeconfig")
        .context("kubeconfig")?
        .0
        .clone();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(std::str::from_utf8(&kubeconfig)?)?;
    let provider = Client::try_from(
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?,
    )?;
    Api::<Workspace>::namespaced(provider, "org-a")
        .get("install-demo")
        .await
        .context("the provider's credential works against the hub with the Recipe's Role")?;
    Ok(())
}

/// One Event per attempt (its result), and one for the credential minted once.
async fn step_events_of_the_attempt(install: &Install, done: &Workspace) -> anyhow::Result<()> {
    let events = installer::event_reasons(&install.hub, done).await?;
    for reason in ["RuntimeCredentialMinted", "JobSucceeded"] {
        ensure!(
            events.iter().any(|e| e == reason),
            "Event {reason} in {events:?}"
        );
    }
    Ok(())
}

/// The result was in status when the runner's ServiceAccount was deleted, and the Job was
/// released only after the identity was revoked.
/// The hub already shows both done; the watches are waited for until they have seen
/// the ServiceAccount's deletion and the Job's release, whatever they say of them.
async fn step_result_before_revocation(order: OrderWatch) -> anyhow::Result<()> {
    let evidence = eventually(
        "the watches to see the revocation and the release",
        WAIT,
        || {
            let evidence = order.evidence.clone();
            async move {
                let evidence = evidence.lock().await.clone();
                let seen = |prefix: &str| evidence.iter().any(|e| e.starts_with(prefix));
                Ok((seen("sa-deleted") && seen("finalizer-released")).then_some(evidence))
            }
        },
    )
    .await?;
    order.watch_sa.abort();
    order.watch_job.abort();
    ensure!(
        evidence
            .iter()
            .filter(|e| e.starts_with("sa-deleted"))
            .eq(["sa-deleted result=Some(Succeeded)"].iter()),
        "the result was in status when the ServiceAccount was deleted: {evidence:?}"
    );
    ensure!(
        evidence
            .iter()
            .any(|e| e == "finalizer-released sa-present=false"),
        "the Job was released after the identity was revoked: {evidence:?}"
    );
    Ok(())
}

/// The controller held the edge's Lease and led the hub-wide duties, and ran as the
/// least-privilege account of manifests/controller/rbac.yaml: that was enough for
/// everything, its Leases, Events and the Edge's status included.
fn step_least_privilege(controller: &ControllerProcess) -> anyhow::Result<()> {
    let log = controller.log_text();
    ensure!(
        log.contains("holding the edge's Lease: working it"),
        "it held the edge"
    );
    ensure!(
        log.contains("leading the hub-wide duties"),
        "it led the hub-wide duties"
    );
    ensure!(
        !log.to_lowercase().contains("forbidden"),
        "the controller was refused something:\n{}",
        controller.log_tail()
    );
    Ok(())
}

/// The installer's Jobs on the edge for one Workspace UID.
async fn jobs_of(edge: &Client, uid: &str) -> anyhow::Result<Vec<Job>> {
    let selector = format!("{}={uid}", names::LABEL_WORKSPACE_UID);
    Ok(Api::<Job>::all(edge.clone())
        .list(&ListParams::default().labels(&selector))
        .await?
        .items)
}

/// The pinned part of a runner's argument vector (all but the attempt's description).
fn pinned(job: &Job) -> Vec<String> {
    job.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.args.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|a| !a.starts_with("--description="))
        .collect()
}

/// A failed attempt stays failed, and a retry runs exactly one new Job: a failed Job leaves
/// the attempt failed, with no new Job; a retry runs exactly one new Job, for attempt 2,
/// with the same chart, version and values.
#[tokio::test]
async fn failed_attempt_waits_for_a_retry_then_runs_exactly_one_new_job() -> anyhow::Result<()> {
    let case = "retry";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let namespace = "retry-hello";
    let spec = PlanSpec::hello(case, "org-a", "retry-demo", namespace);
    let first = env.plan(&spec, 1, "");
    env.runner.hold(&first.job);
    let _controller = controller(env, case).await?;
    let created = env.create_workspace(&hub, &spec, first.clone()).await?;
    let uid = created.uid().context("uid")?;
    let jobs: Api<Job> = Api::namespaced(edge.clone(), namespace);
    let job1 = eventually("attempt 1's Job", WAIT, || async {
        Ok(jobs.get_opt(&first.job).await?)
    })
    .await?;

    // The job controller's verdict, set directly: the test needs a failure.
    installer::fail_job(&edge, namespace, &first.job).await?;
    let failed = wait_workspace(&hub, "org-a", "retry-demo", "the failure", |ws| {
        status_of(ws).cleaned_up && has_condition(ws, "Failed", "True", "JobFailed")
    })
    .await?;
    ensure!(status_of(&failed).job_result == Some(JobResult::Failed));
    ensure!(status_of(&failed).phase == Some(Phase::Failed));
    ensure!(has_condition(&failed, "Ready", "False", "JobFailed"));
    // It stays failed: no new Job without a retry. Checked with no wait: the cleanup just
    // seen is the attempt's last write, after anything its decisions created, and a
    // cleaned-up failure decides Idle, so no later decision comes without an event (and
    // a fixed wait would not see one that did).
    ensure!(
        jobs_of(&edge, &uid).await?.len() == 1,
        "no new Job before a retry"
    );
    ensure!(status_of(&workspace(&hub, "org-a", "retry-demo").await?).attempt == Some(1));

    let second = env.plan(&spec, 2, &uid);
    ensure!(second.job != first.job, "a new Job name for attempt 2");
    installer::retry(&hub, "org-a", "retry-demo", env.seal(second.clone())?).await?;
    let done = wait_workspace(&hub, "org-a", "retry-demo", "attempt 2 installed", |ws| {
        status_of(ws).attempt == Some(2) && has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    ensure!(status_of(&done).attempts.len() == 2);
    ensure!(status_of(&done).attempts[0].result == Some(JobResult::Failed));
    // Exactly one new Job ran (attempt 2's; attempt 1's was held, then failed), and once
    // attempt 2 is cleaned up, attempt 1's Job is gone: only the latest attempt's Job
    // stays on the edge.
    ensure!(
        env.runner.run(namespace, &second.job).is_some(),
        "attempt 2's Job ran"
    );
    eventually("only attempt 2's Job on the edge", WAIT, || async {
        let all: Vec<String> = jobs_of(&edge, &uid)
            .await?
            .iter()
            .map(|j| j.name_any())
            .collect();
        Ok((all == [second.job.clone()]).then_some(()))
    })
    .await?;
    let job2 = jobs.get(&second.job).await?;
    ensure!(
        pinned(&job2) == pinned(&job1),
        "same chart, version, namespace and values file:\n{:?}\n{:?}",
        pinned(&job1),
        pinned(&job2)
    );
    let run = env
        .runner
        .run(namespace, &second.job)
        .context("attempt 2 ran")?;
    ensure!(run.exit == Some(0), "helm: {}", run.output);
    let values = run
        .files
        .get("/etc/providers/values/values.yaml")
        .context("the values file")?;
    ensure!(
        Some(serde_json::from_str::<serde_json::Value>(values)?) == first.values,
        "the original values: {values}"
    );
    ensure!(
        env.runner.run(namespace, &first.job).is_none(),
        "attempt 1 never ran again"
    );
    Ok(())
}

/// The installer never installs into a namespace it does not own: a namespace on the edge
/// that someone else owns: no Job, NamespaceNotAdmitted.
#[tokio::test]
async fn namespace_owned_by_someone_else_is_not_admitted() -> anyhow::Result<()> {
    let case = "foreign";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let namespace = "someone-elses";
    let theirs: Namespace = serde_json::from_value(
        json!({"metadata": {"name": namespace, "labels": {"team": "other"}}}),
    )?;
    Api::<Namespace>::all(edge.clone())
        .create(&PostParams::default(), &theirs)
        .await?;
    let spec = PlanSpec::hello(case, "org-b", "foreign-demo", namespace);
    let _controller = controller(env, case).await?;
    let created = env
        .create_workspace(&hub, &spec, env.plan(&spec, 1, ""))
        .await?;
    let refused = wait_workspace(
        &hub,
        "org-b",
        "foreign-demo",
        "NamespaceNotAdmitted",
        |ws| has_condition(ws, "Failed", "True", "NamespaceNotAdmitted"),
    )
    .await?;
    let status = status_of(&refused);
    ensure!(status.job_result == Some(JobResult::Rejected));
    ensure!(status.namespace_admission_known && !status.namespace_admitted);
    let message = installer::condition(&refused, "Failed")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(
        message.contains(namespace) && message.contains("spec.retry"),
        "a message that says what to do: {message}"
    );
    ensure!(
        jobs_of(&edge, &created.uid().unwrap_or_default())
            .await?
            .is_empty(),
        "no Job"
    );
    let accounts = Api::<ServiceAccount>::namespaced(edge.clone(), namespace)
        .list(&ListParams::default())
        .await?;
    ensure!(
        accounts.items.is_empty(),
        "no identity in someone else's namespace"
    );
    let ns = Api::<Namespace>::all(edge.clone()).get(namespace).await?;
    ensure!(
        !ns.labels().contains_key(names::LABEL_WORKSPACE_UID),
        "their namespace is untouched"
    );
    Ok(())
}

/// Only a plan whose seal verifies runs: a plan whose signature does not verify (written
/// while no webhook checked it): SealInvalid, and nothing at all on the edge.
#[tokio::test]
async fn broken_seal_touches_nothing_on_the_edge() -> anyhow::Result<()> {
    let case = "seal";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let namespace = "seal-broken";
    let spec = PlanSpec::hello(case, "org-a", "seal-demo", namespace);
    let mut sealed = env.seal(env.plan(&spec, 1, ""))?;
    // Changed after sealing: another version than the one signed.
    sealed.plan.version = "0.2.0".into();
    let _controller = controller(env, case).await?;
    let created = env.create_sealed(&hub, &spec, sealed).await?;
    let refused = wait_workspace(&hub, "org-a", "seal-demo", "SealInvalid", |ws| {
        has_condition(ws, "Failed", "True", "SealInvalid")
    })
    .await?;
    let status = status_of(&refused);
    ensure!(
        status.job_result == Some(JobResult::Rejected),
        "Rejected, so the tenant can change intent"
    );
    ensure!(status.cleaned_up);
    ensure!(status.preparation.is_none(), "nothing prepared");
    let message = installer::condition(&refused, "Failed")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(message.contains("signature"), "says why: {message}");
    ensure!(
        !message.contains("spec.retry"),
        "a plan refused for its seal is never retried, so the message does not advise it: {message}"
    );
    // Nothing on the edge. Checked with no wait: the refusal is written after every edge
    // write of its decision and those before it, and a refused plan decides Idle.
    ensure!(
        Api::<Namespace>::all(edge.clone())
            .get_opt(namespace)
            .await?
            .is_none(),
        "no namespace"
    );
    ensure!(
        jobs_of(&edge, &created.uid().unwrap_or_default())
            .await?
            .is_empty(),
        "no Job"
    );
    let events = installer::event_reasons(&hub, &refused).await?;
    ensure!(
        events.iter().any(|e| e == "SealInvalid"),
        "a SealInvalid Event: {events:?}"
    );
    Ok(())
}

/// A release left pending by a killed runner is recovered: a runner killed while helm
/// installs leaves the release pending-install; the next attempt says so and recovers
/// instead of failing with "another operation is in progress".
#[tokio::test]
async fn release_left_pending_by_a_killed_helm_is_recovered() -> anyhow::Result<()> {
    let case = "pending";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let namespace = "pending-hooked";
    let spec = PlanSpec {
        chart: "hooked".into(),
        release: "hooked".into(),
        values: json!({"greeting": "after recovery"}),
        execution: vec![
            installer::rule("", "configmaps"),
            installer::rule("batch", "jobs"),
        ],
        ..PlanSpec::hello(case, "org-b", "pending-demo", namespace)
    };
    let first = env.plan(&spec, 1, "");
    let _controller = controller(env, case).await?;
    let created = env.create_workspace(&hub, &spec, first.clone()).await?;
    let uid = created.uid().context("uid")?;
    let records: Api<Secret> = Api::namespaced(edge.clone(), namespace);
    // helm records the release, then waits on the chart's pre-install hook Job, which no
    // kubelet runs: kill it there.
    eventually("a pending-install release", WAIT, || async {
        let record = records.get_opt("sh.helm.release.v1.hooked.v1").await?;
        Ok(record
            .filter(|r| r.labels().get("status").map(String::as_str) == Some("pending-install")))
    })
    .await?;
    ensure!(
        env.runner.kill(namespace, &first.job),
        "the runner was running helm"
    );
    wait_workspace(&hub, "org-b", "pending-demo", "attempt 1 failed", |ws| {
        status_of(ws).cleaned_up && has_condition(ws, "Failed", "True", "JobFailed")
    })
    .await?;
    let record = records.get("sh.helm.release.v1.hooked.v1").await?;
    ensure!(
        record.labels().get("status").map(String::as_str) == Some("pending-install"),
        "left pending"
    );

    let second = env.plan(&spec, 2, &uid);
    installer::retry(&hub, "org-b", "pending-demo", env.seal(second.clone())?).await?;
    let done = wait_workspace(&hub, "org-b", "pending-demo", "attempt 2 installed", |ws| {
        status_of(ws).attempt == Some(2) && has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    let events = installer::events(&hub, &done).await?;
    let recovered = events
        .iter()
        .find(|(reason, _)| reason == "ReleaseRecovered")
        .with_context(|| format!("a ReleaseRecovered Event: {events:?}"))?;
    ensure!(
        recovered.1.contains("pending-install") && recovered.1.contains("revision 1"),
        "it says what it found and did: {}",
        recovered.1
    );
    // Marked failed, then superseded by the upgrade that revision 2 is.
    let record = records.get("sh.helm.release.v1.hooked.v1").await?;
    let status = record.labels().get("status").cloned().unwrap_or_default();
    ensure!(
        status == "superseded",
        "revision 1 is no longer pending: {status}"
    );
    let record = records.get("sh.helm.release.v1.hooked.v2").await?;
    ensure!(
        record.labels().get("status").map(String::as_str) == Some("deployed"),
        "revision 2 deployed"
    );
    let run = env
        .runner
        .run(namespace, &second.job)
        .context("attempt 2 ran")?;
    ensure!(
        run.exit == Some(0) && !run.output.contains("another operation"),
        "helm: {}",
        run.output
    );
    let config = Api::<ConfigMap>::namespaced(edge.clone(), namespace)
        .get("hooked-greeting")
        .await?;
    ensure!(
        config
            .data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str)
            == Some("after recovery")
    );
    Ok(())
}

/// Deleting a Workspace revokes its attempt's identity and nothing else: deleting a
/// Workspace during an attempt fences it, removes that attempt's identity, and leaves the
/// namespace and the release's objects in place.
#[tokio::test]
async fn deletion_during_an_attempt_removes_only_the_identity() -> anyhow::Result<()> {
    let case = "delete";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let namespace = "delete-hello";
    let spec = PlanSpec::hello(case, "org-a", "delete-demo", namespace);
    let _controller = controller(env, case).await?;
    // Attempt 1 installs the release for real.
    let created = env
        .create_workspace(&hub, &spec, env.plan(&spec, 1, ""))
        .await?;
    let uid = created.uid().context("uid")?;
    wait_workspace(&hub, "org-a", "delete-demo", "attempt 1 installed", |ws| {
        has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    // Attempt 2 (an upgrade to 0.2.0) is running — held by the runner — when the delete comes.
    let upgrade = PlanSpec {
        version: "0.2.0".into(),
        ..spec.clone()
    };
    let second = env.plan(&upgrade, 2, &uid);
    env.runner.hold(&second.job);
    let api: Api<Workspace> = Api::namespaced(hub.clone(), "org-a");
    let mut ws = api.get("delete-demo").await?;
    ws.spec.version = Some("0.2.0".into());
    ws.spec.plan = Some(env.seal(second.clone())?);
    api.replace("delete-demo", &PostParams::default(), &ws)
        .await?;
    wait_workspace(&hub, "org-a", "delete-demo", "attempt 2 running", |ws| {
        status_of(ws).attempt == Some(2) && has_condition(ws, "Progressing", "True", "JobRunning")
    })
    .await?;
    let runner = names::AttemptNames::for_job(&second.job).runner;
    ensure!(
        Api::<ServiceAccount>::namespaced(edge.clone(), namespace)
            .get_opt(&runner)
            .await?
            .is_some()
    );

    // Watch the Workspace go: the fence (status.deleting) is written before it is released.
    let (watching, watched) = tokio::sync::oneshot::channel();
    let fenced = {
        let api = api.clone();
        tokio::spawn(async move {
            let config = watcher::Config::default().fields("metadata.name=delete-demo");
            let mut events = watcher(api, config).applied_objects().boxed();
            let mut watching = Some(watching);
            while let Some(Ok(ws)) = events.next().await {
                if let Some(ready) = watching.take() {
                    let _ = ready.send(());
                }
                if ws.metadata.deletion_timestamp.is_some() && status_of(&ws).deleting {
                    return true;
                }
            }
            false
        })
    };
    // Delete only once the watch sees the object.
    tokio::time::timeout(Duration::from_secs(10), watched).await??;
    api.delete("delete-demo", &DeleteParams::default()).await?;
    eventually("the Workspace to go", WAIT, || async {
        Ok(api.get_opt("delete-demo").await?.is_none().then_some(()))
    })
    .await?;
    ensure!(
        tokio::time::timeout(Duration::from_secs(5), fenced).await??,
        "status.deleting was written first"
    );

    for (kind, present) in [
        (
            "ServiceAccount",
            Api::<ServiceAccount>::namespaced(edge.clone(), namespace)
                .get_opt(&runner)
                .await?
                .is_some(),
        ),
        (
            "Role",
            Api::<Role>::namespaced(edge.clone(), namespace)
                .get_opt(&runner)
                .await?
                .is_some(),
        ),
        (
            "RoleBinding",
            Api::<RoleBinding>::namespaced(edge.clone(), namespace)
                .get_opt(&runner)
                .await?
                .is_some(),
        ),
    ] {
        ensure!(!present, "attempt 2's {kind} is removed");
    }
    ensure!(
        Api::<Job>::namespaced(edge.clone(), namespace)
            .get_opt(&second.job)
            .await?
            .is_none(),
        "its Job is removed"
    );
    let ns = Api::<Namespace>::all(edge.clone()).get(namespace).await?;
    ensure!(
        ns.metadata.deletion_timestamp.is_none(),
        "the namespace stays"
    );
    ensure!(
        ns.labels().get(names::LABEL_RELEASED).map(String::as_str) == Some("true"),
        "released for a later Workspace"
    );
    let records: Api<Secret> = Api::namespaced(edge.clone(), namespace);
    ensure!(
        records
            .get_opt("sh.helm.release.v1.hello.v1")
            .await?
            .is_some(),
        "the release stays"
    );
    ensure!(
        Api::<ConfigMap>::namespaced(edge.clone(), namespace)
            .get_opt("hello-greeting")
            .await?
            .is_some(),
        "the release's objects stay"
    );
    let events = installer::event_reasons(&hub, &created).await?;
    ensure!(events.iter().any(|e| e == "DeletionFenced"), "{events:?}");
    Ok(())
}

/// A Workspace's cleanup touches only its own objects, also under a same-name replacement:
/// delete and at once recreate the same name; the old Workspace's cleanup never touches the
/// new one, which installs normally.
#[tokio::test]
async fn delete_and_recreate_leaves_the_new_workspace_untouched() -> anyhow::Result<()> {
    let case = "recreate";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let namespace = "recreate-hello";
    let spec = PlanSpec::hello(case, "org-b", "recreate-demo", namespace);
    let _controller = controller(env, case).await?;
    let api: Api<Workspace> = Api::namespaced(hub.clone(), "org-b");
    let old = env
        .create_workspace(&hub, &spec, env.plan(&spec, 1, ""))
        .await?;
    wait_workspace(
        &hub,
        "org-b",
        "recreate-demo",
        "the first one installed",
        |ws| has_condition(ws, "Ready", "True", "Installed"),
    )
    .await?;

    api.delete("recreate-demo", &DeleteParams::default())
        .await?;
    let again = PlanSpec {
        values: json!({"greeting": "the second one"}),
        ..spec.clone()
    };
    // As soon as the name is free.
    let new = eventually("the name to be free", WAIT, || async {
        match env
            .create_workspace(&hub, &again, env.plan(&again, 1, ""))
            .await
        {
            Ok(ws) => Ok(Some(ws)),
            Err(error)
                if format!("{error:#}").contains("already exists")
                    || format!("{error:#}").contains("being deleted") =>
            {
                Ok(None)
            }
            Err(error) => Err(error),
        }
    })
    .await?;
    let (old_uid, new_uid) = (old.uid().context("uid")?, new.uid().context("uid")?);
    ensure!(old_uid != new_uid);
    let done = wait_workspace(
        &hub,
        "org-b",
        "recreate-demo",
        "the new one installed",
        |ws| has_condition(ws, "Ready", "True", "Installed"),
    )
    .await?;
    let status = status_of(&done);
    ensure!(done.uid() == Some(new_uid.clone()), "the same object");
    ensure!(
        status.workspace_uid.as_deref() == Some(new_uid.as_str()),
        "bound to the new UID"
    );
    ensure!(
        !status.deleting && done.metadata.deletion_timestamp.is_none(),
        "not fenced by the old cleanup"
    );
    ensure!(
        done.finalizers().contains(&names::FINALIZER.to_owned()),
        "its finalizer stays"
    );
    let ns = Api::<Namespace>::all(edge.clone()).get(namespace).await?;
    ensure!(
        ns.labels().get(names::LABEL_WORKSPACE_UID) == Some(&new_uid),
        "the namespace was adopted"
    );
    ensure!(!ns.labels().contains_key(names::LABEL_RELEASED));
    let jobs = jobs_of(&edge, &new_uid).await?;
    ensure!(jobs.len() == 1, "its own Job");
    ensure!(
        jobs_of(&edge, &old_uid).await?.is_empty(),
        "the old Job was removed with the old Workspace"
    );
    let config = Api::<ConfigMap>::namespaced(edge.clone(), namespace)
        .get("hello-greeting")
        .await?;
    ensure!(
        config
            .data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str)
            == Some("the second one")
    );
    let events = installer::event_reasons(&hub, &done).await?;
    ensure!(
        !events
            .iter()
            .any(|e| e == "DeletionFenced" || e == "Released"),
        "{events:?}"
    );
    ensure!(events.iter().any(|e| e == "NamespaceAdopted"), "{events:?}");
    Ok(())
}
