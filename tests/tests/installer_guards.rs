//! The installer's own guards, each holding with no webhook in front of it: RBAC asked again
//! before an attempt starts, plans sealed for a dry run or for another creation refused,
//! the provider's hub credential owned by UID (never adopted by an annotation), orphaned
//! edge objects swept, and edge kubeconfigs that would run a program refused.
//!
//! Plans here are sealed with the published key and written as admin, as if the webhook
//! had been bypassed; the real `providers-webhook controller` runs as its shipped
//! ServiceAccount, and the job runner runs the Jobs with the real helm.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{Context, ensure};
use k8s_openapi::{
    api::{
        batch::v1::Job,
        core::v1::{Namespace, Secret, ServiceAccount},
        events::v1::Event,
        rbac::v1::{Role, RoleBinding},
    },
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::{SignedDuration, Timestamp},
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use providers_shared::{
    api::{Edge, EdgeSpec, JobResult, RuntimeCredential, SecretKeyRef},
    installer::names,
};
use providers_tests::{
    User,
    installer::{
        self, ControllerOptions, EDGE_CREDENTIALS, Environment, Options, PlanSpec, eventually,
        has_condition, status_of, wait_workspace,
    },
    platform,
};
use serde_json::json;

async fn env() -> anyhow::Result<&'static Environment> {
    installer::environment(
        Path::new(env!("CARGO_BIN_EXE_providers-controlplane")),
        Options::default(),
    )
    .await
}

fn failed_message(ws: &providers_shared::api::Workspace) -> String {
    installer::condition(ws, "Failed")
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

/// Checked right after the refusal is seen, with no wait: the installer runs a decision's
/// actions in order and writes the refusal after every edge write of that decision and
/// the ones before it, so anything they created is on the edge by now. A refused attempt
/// decides Idle, so no later decision comes without an event, and no fixed wait would see
/// one that did.
async fn nothing_on_the_edge(edge: &Client, namespace: &str) -> anyhow::Result<()> {
    ensure!(
        Api::<Namespace>::all(edge.clone())
            .get_opt(namespace)
            .await?
            .is_none(),
        "namespace {namespace} was created on the edge"
    );
    Ok(())
}

/// The owner of a sealed plan must still be allowed to `use` its Recipe when the installer
/// is about to start the attempt (a grant revoked after sealing). carol holds `install` on
/// the edge but no recipe: her attempt is refused with the recipe and the rule to ask for,
/// and nothing is created; granted that recipe, her next attempt runs.
#[tokio::test]
async fn the_recipe_grant_is_asked_again_before_the_attempt_starts() -> anyhow::Result<()> {
    let case = "reuse";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let namespace = "reuse-hello";
    let spec = PlanSpec::hello(case, "org-a", "reuse-demo", namespace);
    platform::grant_install(&hub, "carol", installer::EDGE).await?;
    let mut plan = env.plan(&spec, 1, "");
    plan.owner.username = "carol".into();
    plan.owner.uid = "uid-carol".into();
    let recipe = plan.provider.clone();
    let _controller = env.controller_for(case).await?;
    let created = env.create_workspace(&hub, &spec, plan).await?;
    let refused = wait_workspace(&hub, "org-a", "reuse-demo", "NotAuthorized", |ws| {
        has_condition(ws, "Failed", "True", "NotAuthorized")
    })
    .await?;
    ensure!(status_of(&refused).job_result == Some(JobResult::Rejected));
    let message = failed_message(&refused);
    ensure!(
        message.contains(&format!("\"carol\" may no longer use recipe \"{recipe}\""))
            && message.contains(&format!("the `use` verb on recipes/{recipe}")),
        "{message}"
    );
    nothing_on_the_edge(&edge, namespace).await?;

    platform::grant_use(&hub, "carol", &recipe).await?;
    let mut second = env.plan(&spec, 2, &created.uid().context("uid")?);
    second.owner.username = "carol".into();
    second.owner.uid = "uid-carol".into();
    installer::retry(&hub, "org-a", "reuse-demo", env.seal(second)?).await?;
    wait_workspace(&hub, "org-a", "reuse-demo", "attempt 2 installed", |ws| {
        status_of(ws).attempt == Some(2) && has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    Ok(())
}

/// The owner of a sealed plan must still hold `install` on its edge when the installer is
/// about to start the attempt. Bob holds no grant: his attempt is refused with the reason
/// and nothing is created; once the platform grants it, his next attempt runs.
#[tokio::test]
async fn authorization_is_asked_again_before_the_attempt_starts() -> anyhow::Result<()> {
    let case = "reauth";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let namespace = "reauth-hello";
    let spec = PlanSpec::hello(case, "org-a", "reauth-demo", namespace);
    let mut plan = env.plan(&spec, 1, "");
    plan.owner.username = "bob".into();
    plan.owner.uid = "uid-bob".into();
    let _controller = env.controller_for(case).await?;
    let created = env.create_workspace(&hub, &spec, plan).await?;
    let refused = wait_workspace(&hub, "org-a", "reauth-demo", "NotAuthorized", |ws| {
        has_condition(ws, "Failed", "True", "NotAuthorized")
    })
    .await?;
    ensure!(status_of(&refused).job_result == Some(JobResult::Rejected));
    let message = failed_message(&refused);
    ensure!(
        message.contains("\"bob\" may no longer install onto edge \"edge-1\""),
        "{message}"
    );
    nothing_on_the_edge(&edge, namespace).await?;

    platform::grant_install(&hub, "bob", installer::EDGE).await?;
    let mut second = env.plan(&spec, 2, &created.uid().context("uid")?);
    second.owner.username = "bob".into();
    second.owner.uid = "uid-bob".into();
    installer::retry(&hub, "org-a", "reauth-demo", env.seal(second)?).await?;
    wait_workspace(&hub, "org-a", "reauth-demo", "attempt 2 installed", |ws| {
        status_of(ws).attempt == Some(2) && has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    Ok(())
}

/// Only a plan bound to this Workspace and sealed for a real write runs: a plan sealed for
/// a server-side dry run, or a first plan (no UID yet) sealed long before this Workspace
/// was created, never runs — even with a valid signature.
#[tokio::test]
async fn dry_run_and_stale_first_plans_never_run() -> anyhow::Result<()> {
    let case = "stale";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let _controller = env.controller_for(case).await?;

    let dry = PlanSpec::hello(case, "org-a", "stale-dry", "stale-dry-hello");
    let mut plan = env.plan(&dry, 1, "");
    plan.dry_run = true;
    env.create_workspace(&hub, &dry, plan).await?;

    let old = PlanSpec::hello(case, "org-a", "stale-old", "stale-old-hello");
    let mut plan = env.plan(&old, 1, "");
    let long_ago = Timestamp::now()
        .checked_sub(SignedDuration::from_mins(10))
        .context("time")?;
    plan.sealed_at = Some(Time(long_ago));
    env.create_workspace(&hub, &old, plan).await?;

    for (name, namespace, why) in [
        (
            "stale-dry",
            "stale-dry-hello",
            "sealed for a server-side dry run",
        ),
        (
            "stale-old",
            "stale-old-hello",
            "sealed for another creation",
        ),
    ] {
        let refused = wait_workspace(&hub, "org-a", name, "SealInvalid", |ws| {
            has_condition(ws, "Failed", "True", "SealInvalid")
        })
        .await?;
        let message = failed_message(&refused);
        ensure!(message.contains(why), "{name}: {message}");
        ensure!(!message.contains("spec.retry"), "{name}: {message}");
        nothing_on_the_edge(&edge, namespace).await?;
    }
    Ok(())
}

/// The installer adopts only hub objects it owns by UID: the provider's hub ServiceAccount
/// and RoleBinding are the installer's only by their UID label and owner reference. Objects
/// that merely carry the Workspace's annotation — which anyone who may write in the
/// organization's namespace can set — and a RoleBinding to a broader Role are replaced, not
/// adopted.
#[tokio::test]
async fn the_hub_credential_is_owned_by_uid_and_bound_to_the_plans_role() -> anyhow::Result<()> {
    let case = "credown";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let name = "credown-demo";
    let namespace = "credown-hello";
    let account = format!("provider-{name}");
    let mut spec = PlanSpec::hello(case, "org-a", name, namespace);
    spec.runtime_credential = Some(RuntimeCredential {
        role: "provider-runtime-credown".into(),
        value_path: "hub.credentialSecret".into(),
    });
    let roles: Api<Role> = Api::namespaced(hub.clone(), "org-a");
    for (role, verbs) in [
        ("provider-runtime-credown", json!(["get"])),
        ("credown-broad", json!(["*"])),
    ] {
        let object: Role = serde_json::from_value(json!({
            "metadata": {"name": role, "namespace": "org-a"},
            "rules": [{"apiGroups": ["providers.platform.dev"], "resources": ["workspaces"], "verbs": verbs}],
        }))?;
        roles.create(&PostParams::default(), &object).await?;
    }
    // What someone in the organization's namespace left under the credential's names.
    let annotation = json!({names::ANNOTATION_WORKSPACE: format!("org-a/{name}")});
    let planted_sa: ServiceAccount = serde_json::from_value(json!({
        "metadata": {"name": account, "namespace": "org-a", "annotations": annotation},
    }))?;
    let planted_sa = Api::<ServiceAccount>::namespaced(hub.clone(), "org-a")
        .create(&PostParams::default(), &planted_sa)
        .await?;
    let planted_rb: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": account, "namespace": "org-a", "annotations": annotation},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "credown-broad"},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "org-a"}],
    }))?;
    Api::<RoleBinding>::namespaced(hub.clone(), "org-a")
        .create(&PostParams::default(), &planted_rb)
        .await?;

    let _controller = env.controller_for(case).await?;
    let created = env
        .create_workspace(&hub, &spec, env.plan(&spec, 1, ""))
        .await?;
    let uid = created.uid().context("uid")?;
    let installed = wait_workspace(&hub, "org-a", name, "installed", |ws| {
        has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    let events = installer::event_reasons(&hub, &installed).await?;
    ensure!(
        events.iter().any(|e| e == "RuntimeCredentialReplaced"),
        "{events:?}"
    );
    let sa = Api::<ServiceAccount>::namespaced(hub.clone(), "org-a")
        .get(&account)
        .await?;
    ensure!(
        sa.uid() != planted_sa.uid(),
        "the planted ServiceAccount was replaced"
    );
    ensure!(
        sa.owner_references()
            .iter()
            .any(|o| o.uid == uid && o.kind == "Workspace"),
        "owned by the Workspace: {:?}",
        sa.owner_references()
    );
    ensure!(sa.labels().get(names::LABEL_WORKSPACE_UID) == Some(&uid));
    let rb = Api::<RoleBinding>::namespaced(hub.clone(), "org-a")
        .get(&account)
        .await?;
    ensure!(
        rb.role_ref.name == "provider-runtime-credown",
        "{:?}",
        rb.role_ref
    );
    ensure!(rb.owner_references().iter().any(|o| o.uid == uid));
    let secret = Api::<Secret>::namespaced(edge.clone(), namespace)
        .get(&providers_shared::plan::runtime_credential_secret(name))
        .await?;
    ensure!(secret.labels().get(names::LABEL_WORKSPACE_UID) == Some(&uid));
    Ok(())
}

/// What a forced finalizer removal leaves on the edge is swept: a Workspace whose finalizer
/// was forced off leaves its attempt's identity and Job on the edge; the installer sweeps
/// them (and releases the namespace) and says so in an Event on the Edge.
#[tokio::test]
async fn objects_of_a_workspace_deleted_without_cleanup_are_swept() -> anyhow::Result<()> {
    let case = "orphan";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let name = "orphan-demo";
    let namespace = "orphan-hello";
    let spec = PlanSpec::hello(case, "org-a", name, namespace);
    let plan = env.plan(&spec, 1, "");
    env.runner.hold(&plan.job);
    let mut options = ControllerOptions::new(case, "orphan-0", "lease-orphan");
    options.args = vec!["--orphan-sweep-interval".into(), "2".into()];
    let _controller = env.controller(options).await?;
    env.create_workspace(&hub, &spec, plan.clone()).await?;
    wait_workspace(&hub, "org-a", name, "the Job runs", |ws| {
        has_condition(ws, "Progressing", "True", "JobRunning")
    })
    .await?;
    let runner = names::AttemptNames::for_job(&plan.job).runner;
    ensure!(
        Api::<ServiceAccount>::namespaced(edge.clone(), namespace)
            .get_opt(&runner)
            .await?
            .is_some()
    );

    // The finalizer forced off by the platform (admin may), then the Workspace deleted.
    let workspaces: Api<providers_shared::api::Workspace> = Api::namespaced(hub.clone(), "org-a");
    workspaces
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await?;
    workspaces.delete(name, &DeleteParams::default()).await?;

    eventually(
        "the orphan's objects swept",
        Duration::from_secs(60),
        || async {
            let sa = Api::<ServiceAccount>::namespaced(edge.clone(), namespace)
                .get_opt(&runner)
                .await?;
            let job = Api::<Job>::namespaced(edge.clone(), namespace)
                .get_opt(&plan.job)
                .await?;
            let ns = Api::<Namespace>::all(edge.clone()).get(namespace).await?;
            let released =
                ns.labels().get(names::LABEL_RELEASED).map(String::as_str) == Some("true");
            Ok((sa.is_none() && job.is_none() && released).then_some(()))
        },
    )
    .await?;
    for (kind, gone) in [
        (
            "Role",
            Api::<Role>::namespaced(edge.clone(), namespace)
                .get_opt(&runner)
                .await?
                .is_none(),
        ),
        (
            "RoleBinding",
            Api::<RoleBinding>::namespaced(edge.clone(), namespace)
                .get_opt(&runner)
                .await?
                .is_none(),
        ),
        (
            "values Secret",
            Api::<Secret>::namespaced(edge.clone(), namespace)
                .get_opt(&names::AttemptNames::for_job(&plan.job).values)
                .await?
                .is_none(),
        ),
    ] {
        ensure!(gone, "the orphan's {kind} is still on the edge");
    }
    let events: Vec<Event> = Api::<Event>::all(hub.clone())
        .list(&ListParams::default())
        .await?
        .items;
    ensure!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("OrphansSwept")
                && e.note
                    .as_deref()
                    .is_some_and(|n| n.contains(&format!("org-a/{name}")))
                && e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("Edge")),
        "an OrphansSwept Event on the Edge"
    );
    Ok(())
}

/// An edge kubeconfig runs no program without the platform's consent: an edge kubeconfig
/// whose user runs a program for its credential (`exec`) is refused unless the platform
/// opts in: the program never runs, and the Edge says why.
#[tokio::test]
async fn an_edge_kubeconfig_that_runs_a_program_is_refused() -> anyhow::Result<()> {
    let case = "exec";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let marker = tempfile::tempdir()?.keep().join("ran");
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "edge",
        "clusters": [{"name": "edge", "cluster": {"server": env.edge.server, "insecure-skip-tls-verify": true}}],
        "contexts": [{"name": "edge", "context": {"cluster": "edge", "user": "edge"}}],
        "users": [{"name": "edge", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": "touch",
            "args": [marker.display().to_string()], "interactiveMode": "Never",
        }}}],
    });
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "edge-exec-kubeconfig", "namespace": EDGE_CREDENTIALS},
        "stringData": {"kubeconfig": kubeconfig.to_string()},
    }))?;
    Api::<Secret>::namespaced(hub.clone(), EDGE_CREDENTIALS)
        .create(&PostParams::default(), &secret)
        .await?;
    let edge = Edge::new(
        "edge-exec",
        EdgeSpec {
            cluster_id: "cluster-exec".into(),
            workspace_uuid: "00000000-0000-4000-8000-00000000e7ec".into(),
            kubeconfig_secret_ref: SecretKeyRef {
                namespace: EDGE_CREDENTIALS.into(),
                name: "edge-exec-kubeconfig".into(),
                key: "kubeconfig".into(),
            },
        },
    );
    Api::<Edge>::all(hub.clone())
        .create(&PostParams::default(), &edge)
        .await?;
    let _controller = env.controller_for(case).await?;
    let edges: Api<Edge> = Api::all(env.hub.client(User::Admin).await?);
    let message = eventually("the Edge says why", Duration::from_secs(60), || async {
        let edge = edges.get("edge-exec").await?;
        let ready = edge
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
            .filter(|c| c.status == "False")
            .map(|c| c.message.clone());
        Ok(ready)
    })
    .await?;
    ensure!(message.contains("exec credential plugin"), "{message}");
    ensure!(
        message.contains("--allow-edge-kubeconfig-exec"),
        "{message}"
    );
    ensure!(!marker.exists(), "the exec plugin ran");
    Ok(())
}

/// The installer's edge identity is confined to what it created: the identity the hub uses
/// on an edge (manifests/edge/, as every test here registers its edge) changes only the
/// namespaces it created and what is in them.
#[tokio::test]
async fn the_hubs_identity_on_an_edge_changes_only_what_it_created() -> anyhow::Result<()> {
    let env = env().await?;
    let kubeconfig = installer::hub_identity_on(&env.edge).await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("hub-on-edge.kubeconfig");
    std::fs::write(&path, kubeconfig)?;
    let refused = |args: &[&str], because: &str| -> anyhow::Result<()> {
        let out = providers_tests::kubectl::run(&path, args)?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        ensure!(
            !out.status.success(),
            "`kubectl {}` was allowed",
            args.join(" ")
        );
        ensure!(
            stderr.contains(because),
            "`kubectl {}`: {stderr}",
            args.join(" ")
        );
        Ok(())
    };
    let confined = "changes only the namespaces it created";
    // The policy reaches the API server's admission through an informer: a moment after
    // the environment applied it.
    eventually(
        "the edge policy in force",
        Duration::from_secs(10),
        || async {
            Ok(
                refused(&["create", "namespace", "not-the-installers"], confined)
                    .is_ok()
                    .then_some(()),
            )
        },
    )
    .await?;
    refused(
        &[
            "-n",
            "kube-system",
            "create",
            "role",
            "r",
            "--verb=get",
            "--resource=pods",
        ],
        confined,
    )?;
    refused(
        &["-n", "kube-system", "create", "serviceaccount", "planted"],
        confined,
    )?;
    providers_tests::kubectl::ok(
        env.edge.kubeconfig(User::Admin),
        &[
            "-n",
            "kube-system",
            "create",
            "secret",
            "generic",
            "not-the-installers",
        ],
    )?;
    let delete_planted = [
        "-n",
        "kube-system",
        "delete",
        "secret",
        "not-the-installers",
    ];
    // RBAC grants it no Secret outside its namespaces; and were it granted one by mistake,
    // the policy still holds on its own.
    refused(&delete_planted, "cannot delete resource \"secrets\"")?;
    let admin = env.edge.kubeconfig(User::Admin);
    for args in [
        &[
            "-n",
            "kube-system",
            "create",
            "role",
            "mistaken-secret-deleter",
            "--verb=delete",
            "--resource=secrets",
        ][..],
        &[
            "-n",
            "kube-system",
            "create",
            "rolebinding",
            "mistaken-secret-deleter",
            "--role=mistaken-secret-deleter",
            "--serviceaccount=providers-system:providers-hub",
        ][..],
    ] {
        providers_tests::kubectl::ok(admin, args)?;
    }
    let held = eventually(
        "the policy refuses what RBAC was mistaken to allow",
        Duration::from_secs(10),
        || async { Ok(refused(&delete_planted, confined).is_ok().then_some(())) },
    )
    .await;
    providers_tests::kubectl::ok(
        admin,
        &[
            "-n",
            "kube-system",
            "delete",
            "rolebinding,role",
            "mistaken-secret-deleter",
        ],
    )?;
    held?;

    // In a namespace of its own, only the shapes the installer makes.
    let create = |name: &str, object: serde_json::Value| -> anyhow::Result<PathBuf> {
        let file = dir.path().join(format!("{name}.json"));
        std::fs::write(&file, object.to_string())?;
        Ok(file)
    };
    let namespace = |name: &str, level: Option<&str>| {
        let mut labels = json!({"app.kubernetes.io/managed-by": "providers-installer"});
        if let Some(level) = level {
            labels["pod-security.kubernetes.io/enforce"] = json!(level);
        }
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": name, "labels": labels}})
    };
    let pod_security = "Pod Security Standard";
    for (name, level) in [
        ("ns-no-standard", None),
        ("ns-privileged", Some("privileged")),
    ] {
        let file = create(name, namespace(name, level))?;
        refused(&["create", "-f", &file.display().to_string()], pod_security)?;
    }
    let file = create("ns", namespace("confinement-check", Some("baseline")))?;
    let as_hub = |args: &[&str]| -> anyhow::Result<()> {
        let out = providers_tests::kubectl::run(&path, args)?;
        ensure!(
            out.status.success(),
            "`kubectl {}`: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    };
    as_hub(&["create", "-f", &file.display().to_string()])?;
    refused(
        &[
            "label",
            "--overwrite",
            "namespace",
            "confinement-check",
            "pod-security.kubernetes.io/enforce=privileged",
        ],
        pod_security,
    )?;
    let ns = ["-n", "confinement-check"];
    let runner_only = "only runner identities";
    refused(
        &[&ns[..], &["create", "serviceaccount", "builder"]].concat(),
        runner_only,
    )?;
    refused(
        &[
            &ns[..],
            &["create", "role", "admin", "--verb=*", "--resource=*"],
        ]
        .concat(),
        runner_only,
    )?;
    as_hub(&[&ns[..], &["create", "serviceaccount", "job-1-runner"]].concat())?;
    as_hub(
        &[
            &ns[..],
            &[
                "create",
                "role",
                "job-1-runner",
                "--verb=get",
                "--resource=configmaps",
            ],
        ]
        .concat(),
    )?;
    // Its Roles grant nothing over the namespace itself or RBAC: a runner with such a rule
    // could loosen the namespace's Pod Security Standard.
    // `*/status` is the status of every resource, the namespace's included.
    let wildcard = create(
        "job-6-runner",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "job-6-runner", "namespace": "confinement-check"},
               "rules": [{"apiGroups": [""], "resources": ["*/status"], "verbs": ["patch"]}]}),
    )?;
    refused(
        &["create", "-f", &wildcard.display().to_string()],
        "may not grant",
    )?;
    for (name, verb, resource) in [
        ("job-3-runner", "patch", "namespaces"),
        ("job-4-runner", "create", "rolebindings"),
        ("job-5-runner", "*", "configmaps"),
    ] {
        refused(
            &[
                &ns[..],
                &[
                    "create",
                    "role",
                    name,
                    &format!("--verb={verb}"),
                    &format!("--resource={resource}"),
                ],
            ]
            .concat(),
            "may not grant",
        )?;
    }
    // Whoever else gets rights over the namespace cannot loosen it either: only the
    // platform (the set-pod-security verb) changes its standard.
    for args in [
        &[
            "create",
            "clusterrole",
            "namespace-patcher",
            "--verb=get,patch,create",
            "--resource=namespaces",
        ][..],
        &[
            "create",
            "clusterrolebinding",
            "namespace-patcher",
            "--clusterrole=namespace-patcher",
            "--user=alice",
        ][..],
    ] {
        providers_tests::kubectl::ok(admin, args)?;
    }
    let loosen = [
        "label",
        "--overwrite",
        "namespace",
        "confinement-check",
        "pod-security.kubernetes.io/enforce=privileged",
    ];
    let out = providers_tests::kubectl::run(env.edge.kubeconfig(User::Alice), &loosen)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("changed only by the platform"),
        "a user with patch on the namespace loosened it: {stderr}"
    );
    // Nor first take the namespace out of the guard by removing the installer's label.
    let unlabel = [
        "label",
        "namespace",
        "confinement-check",
        "app.kubernetes.io/managed-by-",
    ];
    let out = providers_tests::kubectl::run(env.edge.kubeconfig(User::Alice), &unlabel)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("changed only by the platform"),
        "a user with patch on the namespace removed the installer's label: {stderr}"
    );
    providers_tests::kubectl::ok(
        env.edge.kubeconfig(User::Alice),
        &["label", "namespace", "confinement-check", "team=web"],
    )?;
    // Nor plant a namespace labelled as the installer's for it to adopt.
    let planted = create("planted", namespace("planted", Some("baseline")))?;
    let out = providers_tests::kubectl::run(
        env.edge.kubeconfig(User::Alice),
        &["create", "-f", &planted.display().to_string()],
    )?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("only the providers installer creates"),
        "a user with create on namespaces planted one labelled as the installer's: {stderr}"
    );
    providers_tests::kubectl::ok(admin, &loosen)?;
    let own_role = "the runner's own Role";
    // A ClusterRole with rights the identity holds, so that RBAC's escalation check lets
    // the binding through to admission.
    providers_tests::kubectl::ok(
        env.edge.kubeconfig(User::Admin),
        &[
            "create",
            "clusterrole",
            "read-namespaces",
            "--verb=get",
            "--resource=namespaces",
        ],
    )?;
    for (name, target) in [
        ("job-2-runner", "--role=job-1-runner"),
        ("job-1-runner", "--clusterrole=read-namespaces"),
    ] {
        refused(
            &[
                &ns[..],
                &[
                    "create",
                    "rolebinding",
                    name,
                    target,
                    "--serviceaccount=confinement-check:job-1-runner",
                ],
            ]
            .concat(),
            own_role,
        )?;
    }
    refused(
        &[
            &ns[..],
            &[
                "create",
                "rolebinding",
                "job-1-runner",
                "--role=job-1-runner",
                "--serviceaccount=kube-system:job-1-runner",
            ],
        ]
        .concat(),
        own_role,
    )?;
    as_hub(
        &[
            &ns[..],
            &[
                "create",
                "rolebinding",
                "job-1-runner",
                "--role=job-1-runner",
                "--serviceaccount=confinement-check:job-1-runner",
            ],
        ]
        .concat(),
    )?;
    let token = create(
        "token",
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
               "metadata": {"name": "t", "namespace": "confinement-check",
                            "annotations": {"kubernetes.io/service-account.name": "job-1-runner"}}}),
    )?;
    // Its Secret rights there come from its own grant, as the installer binds it. The
    // namespace has the installer's label, so an installer running beside this test may
    // bind the grant first (its Secret watch there is refused): the binding is removed as
    // the edge's admin and made again as the hub, until the hub's own create is the one.
    let bind_as_hub = [
        &ns[..],
        &[
            "create",
            "rolebinding",
            "providers-installer",
            "--clusterrole=providers-edge-namespace",
            "--serviceaccount=providers-system:providers-hub",
        ],
    ]
    .concat();
    let mut bound = Err(anyhow::anyhow!("not tried"));
    for _ in 0..3 {
        providers_tests::kubectl::ok(
            admin,
            &[
                &ns[..],
                &[
                    "delete",
                    "rolebinding",
                    "providers-installer",
                    "--ignore-not-found",
                ],
            ]
            .concat(),
        )?;
        bound = as_hub(&bind_as_hub);
        match &bound {
            Err(error) if format!("{error:#}").contains("already exists") => continue,
            _ => break,
        }
    }
    bound?;
    eventually(
        "the grant in force, and token Secrets refused by the policy",
        Duration::from_secs(10),
        || async {
            Ok(refused(
                &["create", "-f", &token.display().to_string()],
                "token Secrets",
            )
            .is_ok()
            .then_some(()))
        },
    )
    .await?;
    let job = |name: &str, pod: serde_json::Value| {
        let mut spec = json!({"serviceAccountName": format!("{name}-runner"), "restartPolicy": "Never",
                              "containers": [{"name": "helm", "image": "helm", "command": ["helm"]}]});
        for (key, value) in pod.as_object().into_iter().flatten() {
            spec[key] = value.clone();
        }
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": "confinement-check"},
               "spec": {"template": {"spec": spec}}})
    };
    let runner_jobs = "only runner Jobs";
    for (what, pod) in [
        ("host-network", json!({"hostNetwork": true})),
        (
            "shell",
            json!({"containers": [{"name": "helm", "image": "helm", "command": ["sh", "-c", "id"]}]}),
        ),
        (
            "privileged",
            json!({"containers": [{"name": "helm", "image": "helm", "command": ["helm"],
                                   "securityContext": {"privileged": true}}]}),
        ),
        (
            "host-path",
            json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
        ),
        ("other-account", json!({"serviceAccountName": "default"})),
    ] {
        let file = create(what, job("job-1", pod))?;
        refused(&["create", "-f", &file.display().to_string()], runner_jobs)?;
    }
    let file = create("runner", job("job-1", json!({})))?;
    as_hub(&["create", "-f", &file.display().to_string()])?;
    Ok(())
}

/// The hub's identity on an edge (manifests/edge/ as shipped) reads no Secret outside the
/// namespaces the installer prepared: a leaked hub credential cannot read the edge's tokens
/// and keys. Inside a namespace it created, it binds itself to its Secret rights there
/// (RoleBinding providers-installer), which the confinement policy admits for itself only;
/// a grant gone (a namespace an older installer prepared) is bound again when refused.
#[tokio::test]
async fn the_hubs_identity_on_an_edge_reads_secrets_only_in_its_own_namespaces()
-> anyhow::Result<()> {
    let case = "secrets";
    let env = env().await?;
    let hub = env.hub_admin().await?;
    let edge = env.edge_admin().await?;
    let kubeconfig = installer::hub_identity_on(&env.edge).await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("hub-on-edge.kubeconfig");
    std::fs::write(&path, kubeconfig)?;
    let can_i = |args: &[&str]| -> anyhow::Result<bool> {
        let out = providers_tests::kubectl::run(&path, &[&["auth", "can-i"][..], args].concat())?;
        Ok(String::from_utf8_lossy(&out.stdout).trim() == "yes")
    };
    for args in [
        &["get", "secrets", "-n", "kube-system"][..],
        &["list", "secrets", "--all-namespaces"][..],
        &["watch", "secrets", "--all-namespaces"][..],
        &["get", "secrets", "-n", "default"][..],
        &["list", "pods", "--all-namespaces"][..],
    ] {
        ensure!(
            !can_i(args)?,
            "the hub's identity on an edge may {}",
            args.join(" ")
        );
    }
    let admin = env.edge.kubeconfig(User::Admin);
    let planted = ["-n", "kube-system", "get", "secret", "hub-cannot-read"];
    if !providers_tests::kubectl::run(admin, &planted)?
        .status
        .success()
    {
        providers_tests::kubectl::ok(
            admin,
            &[
                "-n",
                "kube-system",
                "create",
                "secret",
                "generic",
                "hub-cannot-read",
                "--from-literal=key=value",
            ],
        )?;
    }
    let out = providers_tests::kubectl::run(&path, &planted)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("forbidden"),
        "the hub's identity read a Secret in kube-system: {stderr}"
    );

    // An install: the installer binds its rights in the namespace it made, and works.
    let name = "secrets-demo";
    let namespace = "secrets-hello";
    let spec = PlanSpec::hello(case, "org-a", name, namespace);
    let plan = env.plan(&spec, 1, "");
    let controller = env
        .controller(ControllerOptions::new(case, "secrets-0", "lease-secrets"))
        .await?;
    let created = env.create_workspace(&hub, &spec, plan).await?;
    let uid = created.uid().context("uid")?;
    wait_workspace(&hub, "org-a", name, "installed", |ws| {
        has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    ensure!(can_i(&["list", "secrets", "-n", namespace])?);
    ensure!(can_i(&["watch", "secrets", "-n", namespace])?);
    ensure!(!can_i(&["get", "secrets", "-n", "kube-system"])?);
    ensure!(!can_i(&["list", "secrets", "--all-namespaces"])?);
    let bindings: Api<RoleBinding> = Api::namespaced(edge.clone(), namespace);
    let binding = bindings.get("providers-installer").await?;
    ensure!(
        binding.role_ref.kind == "ClusterRole"
            && binding.role_ref.name == "providers-edge-namespace"
            && binding.subjects.as_ref().is_some_and(|s| s.len() == 1
                && s[0].kind == "ServiceAccount"
                && s[0].name == "providers-hub"),
        "the installer's own grant: {binding:?}"
    );
    // Nobody else gets those rights through the installer: the policy admits that binding
    // for its own identity only.
    let out = providers_tests::kubectl::run(
        &path,
        &[
            "-n",
            namespace,
            "create",
            "rolebinding",
            "providers-installer",
            "--clusterrole=providers-edge-namespace",
            "--user=alice",
            "--dry-run=server",
        ],
    )?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("only runner identities"),
        "the hub's identity bound its Secret rights to someone else: {stderr}"
    );

    // The grant removed (as on a namespace an older installer prepared): an installer that
    // starts is refused its watch of the namespace's Secrets, binds the grant again, and
    // the next attempt runs.
    drop(controller);
    bindings
        .delete("providers-installer", &DeleteParams::default())
        .await?;
    eventually(
        "RBAC sees the grant gone",
        Duration::from_secs(10),
        || async { Ok((!can_i(&["list", "secrets", "-n", namespace])?).then_some(())) },
    )
    .await?;
    let _controller = env
        .controller(ControllerOptions::new(case, "secrets-1", "lease-secrets"))
        .await?;
    eventually("the grant bound again", Duration::from_secs(30), || async {
        Ok(bindings.get_opt("providers-installer").await?.map(|_| ()))
    })
    .await?;
    let second = env.plan(&spec, 2, &uid);
    installer::retry(&hub, "org-a", name, env.seal(second)?).await?;
    wait_workspace(&hub, "org-a", name, "attempt 2 installed", |ws| {
        status_of(ws).attempt == Some(2) && has_condition(ws, "Ready", "True", "Installed")
    })
    .await?;
    ensure!(
        bindings.get_opt("providers-installer").await?.is_some(),
        "the grant is bound again"
    );
    Ok(())
}
