//! Stores the values a sealed plan refers to by digest, before the plan is admitted.
//!
//! A plan resolved afresh gets its PlanValues object created (or, when the same values are
//! stored already, marked as sealed again); a retry or a rollback, whose values were
//! stored when they were first sealed, is admitted only while they still are. Nothing is
//! written for a dry run (the webhooks declare `sideEffects: NoneOnDryRun`). An object
//! written for a write the API server then refuses, or for a Workspace deleted before the
//! installer took it into its ownership, is removed by the installer's sweep.

use std::collections::BTreeMap;

use super::stored_values::StoredValues;
use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
    jiff::{SignedDuration, Timestamp},
};
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use providers_shared::{
    admission::{Denial, mutate::SealedAttempt},
    api::{PlanValues, PlanValuesSpec, Workspace},
    installer::names::label_value,
    plan_values::{self, MAX_PENDING, Source, reseal},
};

/// How far under `MAX_PENDING` the index's count is checked with the API server: the
/// index can be a few events behind.
const PENDING_ASKED_WITHIN: usize = 16;

/// The field manager of the webhook's writes.
const MANAGER: &str = "providers-webhook";

/// Makes sure the PlanValues object of a sealed attempt is there for the installer. On a
/// create (`creating`), values stored already lose the owner references of Workspaces that
/// no longer exist (a restored hub, ADR 41). What `known` says of the stored objects
/// spares the writes and reads it can (`stored_values`).
pub async fn store(
    client: &Client,
    known: &StoredValues,
    namespace: &str,
    attempt: &SealedAttempt,
    now: Timestamp,
    creating: bool,
) -> Result<(), Denial> {
    let plan = &attempt.sealed.plan;
    let Source::Stored { digest } = plan_values::source_of(plan) else {
        return Ok(());
    };
    let name = plan_values::object_name(&plan.workspace.name, digest);
    if known.sealed_again_without_write(namespace, &name, digest, now, creating) {
        return Ok(());
    }
    let api = Api::<PlanValues>::namespaced(client.clone(), namespace);
    let not_stored = |reason: String| Denial::PlanValuesNotStored {
        name: name.clone(),
        reason,
    };
    let Some(values) = &attempt.values else {
        // A retry or a rollback: its values must still be stored.
        return match touch(&api, &name, now, known.window()).await {
            Ok(Some(stored)) => {
                // Checked as the installer will check them, so that the next seal within
                // the window needs no write; values that fail it are the installer's to
                // refuse, as before.
                if plan_values::decode(&stored.spec, digest).is_ok() {
                    known.checked(&stored, digest);
                }
                Ok(())
            }
            Ok(None) => Err(Denial::PlanValuesMissing {
                attempt: plan.attempt,
                name,
                digest: digest.to_owned(),
            }),
            Err(error) => Err(not_stored(said(&error))),
        };
    };
    // Values stored for writes the API server then refuses cannot pile up: past the bound
    // only values stored already are sealed again.
    // Counted from the index; a count near the bound is asked of the API server, so that
    // an index a few events behind neither refuses nor admits past it.
    let pending = match known.pending(namespace) {
        Some(pending) if pending + PENDING_ASKED_WITHIN < MAX_PENDING => pending,
        _ => pending(&api).await.map_err(|e| not_stored(said(&e)))?,
    };
    let stored_already = |stored: PlanValues| async move {
        let stored = same_values(stored, values)?;
        known.checked(&stored, &values.digest);
        if creating {
            disown(client, namespace, &plan.workspace.name, stored).await
        } else {
            Ok(())
        }
    };
    if pending >= MAX_PENDING {
        return match touch(&api, &name, now, known.window()).await {
            Ok(Some(stored)) => stored_already(stored).await,
            Ok(None) => Err(Denial::TooManyPendingValues {
                namespace: namespace.to_owned(),
                pending,
                max: MAX_PENDING,
            }),
            Err(error) => Err(not_stored(said(&error))),
        };
    }
    let object = PlanValues {
        metadata: meta(&name, namespace, &plan.workspace.name, now, known.window()),
        spec: values.clone(),
    };
    // Created, or stored already: then marked as sealed again, so that the sweep, which
    // deletes only an object unchanged since it judged it unused, leaves it alone. Once
    // more if it was swept between the two calls.
    for _ in 0..2 {
        match api.create(&PostParams::default(), &object).await {
            Ok(created) => {
                known.created(&created, digest);
                return Ok(());
            }
            Err(error) if !is_conflict(&error) => return Err(not_stored(said(&error))),
            Err(_) => {}
        }
        match touch(&api, &name, now, known.window()).await {
            Ok(Some(stored)) => return stored_already(stored).await,
            Ok(None) => continue,
            Err(error) => return Err(not_stored(said(&error))),
        }
    }
    Err(Denial::PlanValuesNotStored {
        name,
        reason: "it was deleted twice while being written".to_owned(),
    })
}

/// Whether `stored`, the object under the values' name, holds exactly `values`, checked
/// as the installer will check it: a different or changed one under the name would leave
/// the plan unable to run, so nothing is sealed over it.
fn same_values(stored: PlanValues, values: &PlanValuesSpec) -> Result<PlanValues, Denial> {
    plan_values::decode(&stored.spec, &values.digest).map_err(|defect| {
        Denial::PlanValuesConflict {
            name: stored.metadata.name.clone().unwrap_or_default(),
            defect: format!("its values {defect}"),
        }
    })?;
    Ok(stored)
}

/// Drops the owner references of a lost Workspace from values stored already
/// (`plan_values::disown_lost_owners`), so that a garbage collector does not delete them
/// before the installer takes them into the new Workspace's ownership.
async fn disown(
    client: &Client,
    namespace: &str,
    workspace: &str,
    stored: PlanValues,
) -> Result<(), Denial> {
    let name = stored.metadata.name.clone().unwrap_or_default();
    let owners = stored.metadata.owner_references.clone().unwrap_or_default();
    if owners.is_empty() {
        return Ok(());
    }
    let not_stored = |error: &kube::Error| Denial::PlanValuesNotStored {
        name: name.clone(),
        reason: said(error),
    };
    let live = Api::<Workspace>::namespaced(client.clone(), namespace)
        .get_metadata_opt(workspace)
        .await
        .map_err(|e| not_stored(&e))?
        .and_then(|w| w.metadata.uid);
    let uid = stored.metadata.uid.clone().unwrap_or_default();
    let Some(patch) = plan_values::disown_lost_owners(&uid, &owners, live.as_deref()) else {
        return Ok(());
    };
    Api::<PlanValues>::namespaced(client.clone(), namespace)
        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .map_err(|e| not_stored(&e))?;
    tracing::info!(
        namespace,
        planvalues = name.as_str(),
        "removed the owner references of Workspaces that no longer exist from stored values"
    );
    Ok(())
}

/// How many PlanValues of the namespace wait for their Workspace's installer, counted up to
/// [`MAX_PENDING`].
async fn pending(api: &Api<PlanValues>) -> Result<usize, kube::Error> {
    let waiting = format!("{}=false", plan_values::LABEL_ADOPTED);
    let listed = api
        .list_metadata(
            &ListParams::default()
                .labels(&waiting)
                .limit(MAX_PENDING as u32),
        )
        .await?;
    Ok(listed.items.len())
}

/// Marks the object as sealed again, with this webhook's mark window; the object as
/// marked, or `None` when there is none.
async fn touch(
    api: &Api<PlanValues>,
    name: &str,
    now: Timestamp,
    window: SignedDuration,
) -> Result<Option<PlanValues>, kube::Error> {
    let patch = serde_json::json!({
        "metadata": {"annotations": {
            plan_values::ANNOTATION_LAST_SEALED: now.to_string(),
            reseal::ANNOTATION_MARK_WINDOW: window.as_secs().to_string(),
        }}
    });
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(marked) => Ok(Some(marked)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(error),
    }
}

fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

fn meta(
    name: &str,
    namespace: &str,
    workspace: &str,
    now: Timestamp,
    window: SignedDuration,
) -> ObjectMeta {
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
            (plan_values::LABEL_ADOPTED.to_owned(), "false".to_owned()),
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
            (
                reseal::ANNOTATION_MARK_WINDOW.to_owned(),
                window.as_secs().to_string(),
            ),
        ])),
        ..Default::default()
    }
}

/// What the API server said, without the client's wrapping.
fn said(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}
