//! The catalog the plugin tests run against, and writing what the webhook and the
//! installer would write: a sealed plan in spec.plan, a status through the status
//! subresource.

use anyhow::Context;
use providers_shared::{
    api::{ChartRef, Owner, Plan, WorkspaceIdentity},
    seal::Sealer,
};
use serde_json::{Value, json};

use crate::{ControlPlaneInfo, User, kubectl, platform, plugin};

/// The chart repository every test recipe names (nothing is fetched from it).
pub const REPOSITORY: &str = "http://127.0.0.1:1/charts";
/// The edge workspace every test edge belongs to.
pub const EDGE_UUID: &str = "0b6f0f4e-7c1a-4d55-9d1e-3b8f6f1d2a10";
/// The namespace of the read-only views; only fixtures write in it.
pub const SHOWCASE: &str = "org-list";
/// A fixed time for results and conditions, so outputs are stable.
pub const FINISHED: &str = "2026-01-01T10:00:00Z";

/// CRDs and tenant RBAC from manifests/, then the catalog: recipes `podinfo` (a values
/// schema, a hub credential) and `redis` (no values); edges `edge-1` (alice may install),
/// `edge-2` (alice and bob), `edge-3` (nobody; not ready); the tenants' catalog access
/// and alice's tenant role in the showcase namespace.
pub fn install_catalog(plane: &ControlPlaneInfo) -> anyhow::Result<()> {
    platform::install(plane)?;
    let admin = plane.kubeconfig(User::Admin);
    platform::apply_yaml(admin, &catalog_yaml())?;
    for (n, ready) in [(1, true), (2, true), (3, false)] {
        let status =
            json!({"status": {"ready": ready, "server": format!("https://10.0.0.{n}:6443")}});
        kubectl::ok(
            admin,
            &[
                "patch",
                "edge",
                &format!("edge-{n}"),
                "--subresource=status",
                "--type=merge",
                "-p",
                &status.to_string(),
            ],
        )?;
    }
    Ok(())
}

fn catalog_yaml() -> String {
    let mut docs = vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "plugin-tests-catalog"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "providers-catalog-reader"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "tenants"}]}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SHOWCASE}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "tenant-alice", "namespace": SHOWCASE},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "providers-tenant"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}),
        json!({"apiVersion": "providers.platform.dev/v1alpha1", "kind": "Recipe",
        "metadata": {"name": "podinfo"},
        "spec": {
            "chart": {"repository": REPOSITORY, "name": "podinfo"},
            "versions": ["6.5.0", "6.4.0"],
            "namespace": "podinfo", "release": "podinfo",
            "values": {"replicaCount": 1, "ui": {"color": "#34577c"}},
            "valuesSchema": [
                {"path": "replicaCount", "type": "integer", "minimum": 1, "maximum": 5, "description": "Pods to run"},
                {"path": "ui.message", "type": "string", "maxLength": 64, "description": "Greeting on the page"},
                {"path": "ui.color", "type": "string", "pattern": "^#[0-9a-f]{6}$"},
                {"path": "tier", "type": "string", "enum": ["small", "large"]}
            ],
            "runtimeCredential": {"role": "provider-runtime-podinfo", "valuePath": "hub.secretName"}
        }}),
        json!({"apiVersion": "providers.platform.dev/v1alpha1", "kind": "Recipe",
        "metadata": {"name": "redis"},
        "spec": {
            "chart": {"repository": REPOSITORY, "name": "redis"},
            "versions": ["19.0.1"],
            "namespace": "redis", "release": "cache"
        }}),
    ];
    for (edge, users) in [
        ("edge-1", &["alice"][..]),
        ("edge-2", &["alice", "bob"][..]),
        ("edge-3", &[][..]),
    ] {
        docs.push(json!({"apiVersion": "providers.platform.dev/v1alpha1", "kind": "Edge",
               "metadata": {"name": edge},
               "spec": {"clusterID": format!("cluster-{edge}"), "workspaceUUID": EDGE_UUID,
                        "kubeconfigSecretRef": {"namespace": "providers-edges", "name": format!("{edge}-kubeconfig")}}}));
        for user in users {
            let name = format!("plugin-tests-install-{edge}-{user}");
            docs.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": name},
                   "rules": [{"apiGroups": ["providers.platform.dev"], "resources": ["edges"], "resourceNames": [edge], "verbs": ["install"]}]}));
            docs.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": name},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}));
        }
    }
    docs.iter()
        .map(|d| serde_norway::to_string(d).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("---\n")
}

/// A Workspace as the admin reads it, managed fields included.
/// The values the sealed plan `plan` (spec.plan as JSON) refers to by digest, read with
/// kubectl from its PlanValues object and checked against that digest.
pub fn plan_values(plane: &ControlPlaneInfo, plan: &Value) -> anyhow::Result<Value> {
    let plan: providers_shared::api::SealedPlan = serde_json::from_value(plan.clone())?;
    let digest = plan
        .plan
        .values_digest
        .context("the plan refers to its values by digest")?;
    let name = providers_shared::plan_values::object_name(&plan.plan.workspace.name, &digest);
    let text = kubectl::ok(
        plane.kubeconfig(User::Admin),
        &[
            "get",
            "planvalues.providers.platform.dev",
            &name,
            "-n",
            &plan.plan.workspace.namespace,
            "-o",
            "json",
        ],
    )?;
    let stored: providers_shared::api::PlanValues = serde_json::from_str(&text)?;
    Ok(providers_shared::plan_values::decode(
        &stored.spec,
        &digest,
    )?)
}

pub fn get(plane: &ControlPlaneInfo, namespace: &str, name: &str) -> anyhow::Result<Value> {
    let text = kubectl::ok(
        plane.kubeconfig(User::Admin),
        &[
            "get",
            "workspace.providers.platform.dev",
            name,
            "-n",
            namespace,
            "-o",
            "json",
            "--show-managed-fields",
        ],
    )?;
    Ok(serde_json::from_str(&text)?)
}

/// Waits until `name` exists (for example while a child process creates it).
pub fn wait_for(plane: &ControlPlaneInfo, namespace: &str, name: &str) -> anyhow::Result<Value> {
    for _ in 0..100 {
        if let Ok(ws) = get(plane, namespace, name) {
            return Ok(ws);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    anyhow::bail!("{namespace}/{name} was not created within 10 s")
}

/// Seals attempt `attempt` of a Workspace of recipe podinfo as the webhook would, with
/// the key of `seed`, and writes it to spec.plan as the admin (only without a webhook:
/// the real one refuses a plan it did not seal). Returns the sealed plan.
pub fn seal(
    plane: &ControlPlaneInfo,
    namespace: &str,
    name: &str,
    attempt: i64,
    seed: [u8; 32],
) -> anyhow::Result<Value> {
    let ws = get(plane, namespace, name)?;
    let mut values = json!({"replicaCount": 1, "ui": {"color": "#34577c"}});
    if let Some(tenant) = ws["spec"]["values"].as_object() {
        for (k, v) in tenant {
            match (values.get_mut(k), v) {
                (Some(Value::Object(base)), Value::Object(over)) => base.extend(over.clone()),
                _ => values[k] = v.clone(),
            }
        }
    }
    let edge = ws["spec"]["edge"].as_str().context("edge")?.to_owned();
    let plan = Plan {
        drift: None,
        attempt,
        attempt_id: format!("{name}-attempt-{attempt}"),
        retry: ws["spec"]["retry"].as_i64().unwrap_or(0),
        workspace: WorkspaceIdentity {
            namespace: namespace.into(),
            name: name.into(),
            uid: ws["metadata"]["uid"].as_str().context("uid")?.into(),
        },
        org: namespace.into(),
        provider: "podinfo".into(),
        owner: Owner {
            username: "alice".into(),
            ..Default::default()
        },
        chart: ChartRef {
            repository: REPOSITORY.into(),
            name: "podinfo".into(),
        },
        version: "6.5.0".into(),
        release: "podinfo".into(),
        namespace: "podinfo".into(),
        values_digest: None,
        values: Some(values),
        cluster: format!("cluster-{edge}"),
        edge_name: edge,
        edge_workspace_uuid: EDGE_UUID.into(),
        job: format!("podinfo-{name}-{attempt}"),
        execution: vec![],
        runtime_credential: None,
        sealed_at: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        )),
        dry_run: false,
        cause: None,
        restores: None,
    };
    let sealed = serde_json::to_value(Sealer::from_seed(seed).seal(plan)?)?;
    write_plan(plane, namespace, name, &sealed)?;
    Ok(sealed)
}

/// Writes spec.plan as the admin.
pub fn write_plan(
    plane: &ControlPlaneInfo,
    namespace: &str,
    name: &str,
    plan: &Value,
) -> anyhow::Result<()> {
    kubectl::ok(
        plane.kubeconfig(User::Admin),
        &[
            "patch",
            "workspace.providers.platform.dev",
            name,
            "-n",
            namespace,
            "--type=merge",
            "-p",
            &json!({"spec": {"plan": plan}}).to_string(),
        ],
    )?;
    Ok(())
}

/// Writes status through the status subresource, as the installer does.
pub fn write_status(
    plane: &ControlPlaneInfo,
    namespace: &str,
    name: &str,
    status: Value,
) -> anyhow::Result<()> {
    kubectl::ok(
        plane.kubeconfig(User::Admin),
        &[
            "patch",
            "workspace.providers.platform.dev",
            name,
            "-n",
            namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            &json!({ "status": status }).to_string(),
        ],
    )?;
    Ok(())
}

/// The attempt number of the Workspace's sealed plan.
pub fn sealed_attempt(
    plane: &ControlPlaneInfo,
    namespace: &str,
    name: &str,
) -> anyhow::Result<i64> {
    get(plane, namespace, name)?["spec"]["plan"]["attempt"]
        .as_i64()
        .context("spec.plan.attempt")
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": FINISHED})
}

fn record(name: &str, attempt: i64, result: &str, message: &str) -> Value {
    json!({"attempt": attempt, "attemptID": format!("{name}-attempt-{attempt}"), "version": "6.5.0",
           "owner": "alice", "job": format!("podinfo-{name}-{attempt}"), "result": result,
           "finishedAt": FINISHED, "message": message})
}

/// The message of a failed attempt in these statuses.
pub const FAILURE: &str = "helm exited 1: context deadline exceeded";

/// Attempt `attempt` runs.
pub fn running(name: &str, attempt: i64) -> Value {
    json!({"phase": "Progressing", "attempt": attempt, "job": format!("podinfo-{name}-{attempt}"), "jobUID": format!("uid-{name}-{attempt}"),
           "conditions": [condition("Ready", "False", "JobRunning", "helm upgrade --install is running"),
                          condition("Progressing", "True", "JobRunning", "the Job runs on the edge")]})
}

/// Attempts 1..=`attempt` failed.
pub fn failed(name: &str, attempt: i64) -> Value {
    let attempts: Vec<Value> = (1..=attempt)
        .map(|a| record(name, a, "Failed", FAILURE))
        .collect();
    json!({"phase": "Failed", "attempt": attempt, "job": format!("podinfo-{name}-{attempt}"), "jobUID": format!("uid-{name}-{attempt}"),
           "jobResult": "Failed", "finishedAt": FINISHED, "cleanedUp": true,
           "conditions": [condition("Ready", "False", "JobFailed", FAILURE),
                          condition("Failed", "True", "JobFailed", FAILURE)],
           "attempts": attempts})
}

/// Attempts before `attempt` failed; `attempt` succeeded.
pub fn succeeded(name: &str, attempt: i64) -> Value {
    let mut attempts: Vec<Value> = (1..attempt)
        .map(|a| record(name, a, "Failed", FAILURE))
        .collect();
    attempts.push(record(name, attempt, "Succeeded", "installed"));
    json!({"phase": "Succeeded", "attempt": attempt, "job": format!("podinfo-{name}-{attempt}"), "jobUID": format!("uid-{name}-{attempt}"),
           "jobResult": "Succeeded", "finishedAt": FINISHED, "cleanedUp": true,
           "runtimeCredentialSecret": format!("{name}-hub-kubeconfig"),
           "conditions": [condition("Ready", "True", "JobSucceeded", "podinfo 6.5.0 is installed"),
                          condition("Failed", "False", "JobSucceeded", "")],
           "attempts": attempts})
}

/// Asserts stderr is one `error: ...` line, then only `hint: ...` lines.
pub fn assert_one_error_line(stderr: &str) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        !lines.is_empty() && lines[0].starts_with("error: "),
        "{stderr}"
    );
    assert!(
        lines[1..].iter().all(|l| l.starts_with("hint: ")),
        "{stderr}"
    );
    assert!(!stderr.contains("admission webhook \""), "{stderr}");
}

/// Installs `name` as alice in org-a with `extra` arguments; fails the test if refused.
pub fn install_as_alice(
    plane: &ControlPlaneInfo,
    name: &str,
    extra: &[&str],
) -> anyhow::Result<String> {
    let mut args = vec!["install", name, "--recipe", "podinfo", "--edge", "edge-1"];
    args.extend_from_slice(extra);
    Ok(plugin::run(plane.kubeconfig(User::Alice), &args)?
        .ok()?
        .to_owned())
}
