//! AdmissionReview bodies as the API server sends them, built from Workspaces the real
//! API server stored (managed fields and all).

use anyhow::{Context, bail};
use k8s_openapi::api::authentication::v1::UserInfo;
use providers_shared::{
    admission::{
        Operation, Request,
        mutate::{Lookups, PlanAction, Sealing, plan_action, seal_attempt},
    },
    api::{EdgeSpec, RecipeSpec, Workspace},
    seal::{Keyring, Sealer},
};
use serde_json::{Value, json};

use crate::fixture::{Fixture, REPOSITORY};

/// One kind of review the load sends.
pub struct Scenario {
    pub name: &'static str,
    /// A short name for files.
    pub file_name: &'static str,
    pub path: &'static str,
    pub body: String,
    /// What every answer must contain.
    pub expect: &'static str,
    /// Whether the webhook asks the API server (SubjectAccessReview) for each review.
    pub calls_apiserver: bool,
}

/// Marks an answer that allows the write.
const ALLOWED: &str = r#""allowed":true"#;
/// Marks an answer that allows the write with a JSON patch.
const PATCHED: &str = r#""patchType":"JSONPatch""#;

fn alice() -> UserInfo {
    UserInfo {
        username: Some("alice".into()),
        groups: Some(vec!["tenants".into(), "system:authenticated".into()]),
        ..Default::default()
    }
}

fn review(
    uid: &str,
    operation: Operation,
    object: &Workspace,
    old: Option<&Workspace>,
) -> anyhow::Result<String> {
    let (operation, options) = match operation {
        Operation::Create => ("CREATE", "CreateOptions"),
        Operation::Update => ("UPDATE", "UpdateOptions"),
    };
    let gvk =
        json!({"group": "providers.platform.dev", "version": "v1alpha1", "kind": "Workspace"});
    let gvr =
        json!({"group": "providers.platform.dev", "version": "v1alpha1", "resource": "workspaces"});
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": object.metadata.name,
            "namespace": object.metadata.namespace,
            "operation": operation,
            "userInfo": alice(),
            "object": object,
            "oldObject": old.map_or(Value::Null, |o| json!(o)),
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": options, "fieldManager": "kubectl-edit"},
        }
    });
    Ok(serde_json::to_string(&body)?)
}

/// Sets up the Workspaces (through the API server and the webhooks) and builds the reviews.
pub async fn scenarios(fixture: &Fixture) -> anyhow::Result<Vec<Scenario>> {
    let sealer = Sealer::from_pkcs8_pem(&fixture.sealing_key_pem()?)?;
    fixture.create("load-succeeded").await?;
    let succeeded = fixture.finish("load-succeeded", "Succeeded").await?;
    fixture.create("load-failed").await?;
    let failed = fixture.finish("load-failed", "Failed").await?;
    fixture.create("load-active").await?;
    let active = fixture.get("load-active").await?;

    // After a successful attempt the tenant raises spec.retry: the mutating webhook keeps the
    // plan, the validating webhook admits the unchanged plan (with a warning).
    let mut retried = succeeded.clone();
    retried.spec.retry = Some(1);
    let keep = review("keep", Operation::Update, &retried, Some(&succeeded))?;

    // After a failed attempt the tenant raises spec.retry: the mutating webhook sealed
    // attempt 2 (here: sealed with the webhook's own key file, as it would), the validating
    // webhook verifies that seal and that it was made for this very request.
    let mut retry = failed.clone();
    retry.spec.retry = Some(1);
    let (recipe, edge) = (
        crate::fixture::recipe().spec,
        crate::fixture::edge("edge-1").spec,
    );
    retry.spec.plan = Some(seal_next_attempt(
        &sealer,
        (&recipe, &edge),
        &retry,
        &failed,
    )?);
    let verify = review("verify", Operation::Update, &retry, Some(&failed))?;

    // A client that never wrote spec.plan (a GitOps tool replacing the object) leaves it
    // out during an active attempt: the mutating webhook puts it back with a patch.
    let mut omitted = active.clone();
    omitted.spec.plan = None;
    let restore = review("restore", Operation::Update, &omitted, Some(&active))?;

    // A new Workspace: cache lookups, a SubjectAccessReview to the API server, a seal.
    let mut new = crate::fixture::workspace("load-create");
    new.metadata.managed_fields = active.metadata.managed_fields.clone();
    let create = review("create", Operation::Create, &new, None)?;

    Ok(vec![
        Scenario {
            name: "validate UPDATE, plan kept (retry after success)",
            file_name: "validate-keep",
            path: "/validate",
            body: keep,
            expect: ALLOWED,
            calls_apiserver: false,
        },
        Scenario {
            name: "validate UPDATE, new attempt's seal verified (retry after failure)",
            file_name: "validate-verify",
            path: "/validate",
            body: verify,
            expect: ALLOWED,
            calls_apiserver: false,
        },
        Scenario {
            name: "mutate UPDATE, omitted plan restored",
            file_name: "mutate-restore",
            path: "/mutate",
            body: restore,
            expect: PATCHED,
            calls_apiserver: false,
        },
        Scenario {
            name: "mutate CREATE, SubjectAccessReview + seal",
            file_name: "mutate-create",
            path: "/mutate",
            body: create,
            expect: PATCHED,
            calls_apiserver: true,
        },
    ])
}

/// The plan of attempt 2 that the mutating webhook seals when `new` raises spec.retry on
/// the failed `old`, made with the same shared functions and key.
fn seal_next_attempt(
    sealer: &Sealer,
    lookups: (&RecipeSpec, &EdgeSpec),
    new: &Workspace,
    old: &Workspace,
) -> anyhow::Result<providers_shared::api::SealedPlan> {
    let user = alice();
    let mut without_plan = new.clone();
    without_plan.spec.plan = None;
    let request = Request {
        operation: Operation::Update,
        user: &user,
        object: &without_plan,
        old: Some(old),
        dry_run: false,
        now: k8s_openapi::jiff::Timestamp::now(),
    };
    let start = match plan_action(&request).map_err(|d| anyhow::anyhow!("{d}"))? {
        PlanAction::Start(start) => start,
        other => bail!("raising spec.retry after a failure should start an attempt: {other:?}"),
    };
    let (recipe, edge) = lookups;
    let lookups = Lookups {
        recipe: Some(recipe),
        edge: Some(edge),
        may_install: Ok(true),
        may_use: Ok(true),
        automatic_repairer: Ok(false),
    };
    let keyring = Keyring::from(sealer);
    let allowlist = [REPOSITORY.to_owned()];
    let sealing = Sealing {
        sealer,
        keyring: &keyring,
        allowlist: &allowlist,
    };
    seal_attempt(&request, &start, lookups, &sealing)
        .map(|attempt| attempt.sealed)
        .map_err(|d| anyhow::anyhow!("{d}"))
        .context("sealing attempt 2")
}

/// Checks one answer in full before the load: allowed, patched or not as expected.
pub fn check_answer(scenario: &Scenario, body: &[u8]) -> anyhow::Result<String> {
    let review: Value = serde_json::from_slice(body)
        .with_context(|| format!("not JSON: {}", String::from_utf8_lossy(body)))?;
    let response = &review["response"];
    if response["allowed"] != json!(true) {
        bail!("{}: denied: {}", scenario.name, response["status"]);
    }
    let patched = response.get("patch").is_some_and(|p| !p.is_null());
    if patched != (scenario.expect == PATCHED) {
        bail!("{}: unexpected answer: {response}", scenario.name);
    }
    let warnings = response["warnings"].as_array().map_or(0, Vec::len);
    Ok(format!(
        "allowed{}{}",
        if patched { ", with a JSON patch" } else { "" },
        if warnings > 0 { ", with a warning" } else { "" }
    ))
}
