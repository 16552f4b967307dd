//! Stores the values a sealed plan refers to by digest, before the plan is admitted.
//!
//! A plan resolved afresh gets its PlanValues object created (or, when the same values are
//! stored already, marked as sealed again); a retry or a rollback, whose values were
//! stored when they were first sealed, is admitted only while they still are. Nothing is
//! written for a dry run (the webhooks declare `sideEffects: NoneOnDryRun`). An object
//! written for a write the API server then refuses, or for a Workspace deleted before the
//! installer took it into its ownership, is removed by the installer's sweep.

use std::collections::BTreeMap;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::ObjectMeta, jiff::Timestamp};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use providers::{
    admission::{Denial, mutate::SealedAttempt},
    api::{PlanValues, PlanValuesSpec},
    installer::names::label_value,
    plan_values::{self, Source},
};

/// The field manager of the webhook's writes.
const MANAGER: &str = "providers-webhook";

/// Makes sure the PlanValues object of a sealed attempt is there for the installer.
pub async fn store(
    client: &Client,
    namespace: &str,
    attempt: &SealedAttempt,
    now: Timestamp,
) -> Result<(), Denial> {
    let plan = &attempt.sealed.plan;
    let Source::Stored { digest } = plan_values::source_of(plan) else {
        return Ok(());
    };
    let name = plan_values::object_name(&plan.workspace.name, digest);
    let api = Api::<PlanValues>::namespaced(client.clone(), namespace);
    let not_stored = |reason: String| Denial::PlanValuesNotStored {
        name: name.clone(),
        reason,
    };
    let Some(values) = &attempt.values else {
        // A retry or a rollback: its values must still be stored.
        return match touch(&api, &name, now).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Denial::PlanValuesMissing {
                attempt: plan.attempt,
                name,
                digest: digest.to_owned(),
            }),
            Err(error) => Err(not_stored(error.to_string())),
        };
    };
    let object = PlanValues {
        metadata: meta(&name, namespace, &plan.workspace.name, now),
        spec: values.clone(),
    };
    // Created, or stored already: then marked as sealed again, so that the sweep, which
    // deletes only an object unchanged since it judged it unused, leaves it alone. Once
    // more if it was swept between the two calls.
    for _ in 0..2 {
        match api.create(&PostParams::default(), &object).await {
            Ok(_) => return Ok(()),
            Err(error) if !is_conflict(&error) => return Err(not_stored(error.to_string())),
            Err(_) => {}
        }
        match touch(&api, &name, now).await {
            Ok(true) => return same_values(&api, &name, values).await.map_err(not_stored),
            Ok(false) => continue,
            Err(error) => return Err(not_stored(error.to_string())),
        }
    }
    Err(Denial::PlanValuesNotStored {
        name,
        reason: "it was deleted twice while being written".to_owned(),
    })
}

/// Whether the stored object of that name holds `values`: a Workspace's values objects are
/// named by 128 bits of their digest, and a different one under the name would leave the
/// plan unable to run. The error says what to do.
async fn same_values(
    api: &Api<PlanValues>,
    name: &str,
    values: &PlanValuesSpec,
) -> Result<(), String> {
    let stored = api.get(name).await.map_err(|error| error.to_string())?;
    if stored.spec.digest == values.digest {
        return Ok(());
    }
    Err(format!(
        "it holds values of digest {}, not {}; the platform team deletes it, then the write is tried again",
        providers::text::quoted(&stored.spec.digest),
        values.digest
    ))
}

/// Marks the object as sealed again; `false` when there is none.
async fn touch(api: &Api<PlanValues>, name: &str, now: Timestamp) -> Result<bool, kube::Error> {
    let patch = serde_json::json!({
        "metadata": {"annotations": {plan_values::ANNOTATION_LAST_SEALED: now.to_string()}}
    });
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(error) => Err(error),
    }
}

fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

fn meta(name: &str, namespace: &str, workspace: &str, now: Timestamp) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        labels: Some(BTreeMap::from([
            (
                plan_values::LABEL_WORKSPACE.to_owned(),
                label_value(workspace),
            ),
            (
                "app.kubernetes.io/managed-by".to_owned(),
                MANAGER.to_owned(),
            ),
        ])),
        annotations: Some(BTreeMap::from([
            (
                plan_values::ANNOTATION_WORKSPACE.to_owned(),
                workspace.to_owned(),
            ),
            (
                plan_values::ANNOTATION_LAST_SEALED.to_owned(),
                now.to_string(),
            ),
        ])),
        ..Default::default()
    }
}
