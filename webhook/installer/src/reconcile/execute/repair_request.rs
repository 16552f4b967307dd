//! An automatic repair, asked of the webhook: raise spec.retry with the automatic repair
//! annotation on the Workspace as read live. The webhook seals the repair for the plan's
//! owner or refuses it; a refusal is said in an Event and asked again later by the rule.

use kube::{
    Api, Resource,
    api::{Patch, PatchParams},
    runtime::events::{Event, EventType},
};
use providers_shared::{
    api::Workspace,
    installer::{RepairRequest, patch},
};

use super::writes::hub_write;
use crate::{support::event_recorder::EventRecorder, support::stop::Stop};

/// A request found the Workspace changed between the read and the write this many times
/// before it gives up until the next decision.
const TRIES: usize = 3;

/// Asks for the repair; the Workspace as the webhook left it when the request was sealed.
pub async fn request(
    recorder: &EventRecorder,
    workspaces: &Api<Workspace>,
    name: &str,
    request: &RepairRequest,
) -> Result<Option<Workspace>, Stop> {
    for _ in 0..TRIES {
        let live = workspaces
            .get(name)
            .await
            .map_err(|e| hub_write("request-repair", e))?;
        let Some(raise) = patch::request_repair(&live, request) else {
            // Repaired, changed or replaced meanwhile: the next decision sees it.
            return Ok(None);
        };
        match workspaces
            .patch(name, &PatchParams::default(), &Patch::Json::<()>(raise))
            .await
        {
            Ok(sealed) => return Ok(Some(sealed)),
            // The resourceVersion moved between the read and the write: read again.
            Err(kube::Error::Api(status)) if super::writes::is_failed_test(&status) => continue,
            Err(kube::Error::Api(status)) => {
                report_refusal(recorder, &live, request, &status.message).await;
                return Ok(None);
            }
            Err(error) => return Err(hub_write("request-repair", error)),
        }
    }
    Ok(None)
}

/// The webhook (or RBAC) refused the request: said where the tenant looks, and in the log.
async fn report_refusal(
    recorder: &EventRecorder,
    ws: &Workspace,
    request: &RepairRequest,
    message: &str,
) {
    let note = format!(
        "the automatic repair of attempt {} was refused: {message}; it is asked again in {} s, or repair by hand: kubectl provider repair",
        request.attempt,
        providers_shared::installer::drift::REQUEST_AGAIN_SECONDS
    );
    tracing::warn!(attempt = request.attempt, "{note}");
    let event = Event {
        type_: EventType::Warning,
        reason: "AutomaticRepairRefused".into(),
        note: Some(providers_shared::text::truncated(&note, 1000)),
        action: format!("Attempt{}", request.attempt),
        secondary: None,
    };
    if let Err(error) = recorder.publish(&event, &ws.object_ref(&())).await {
        tracing::warn!(%error, "cannot publish an Event");
    }
}
