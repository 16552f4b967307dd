//! How a Workspace's name, version and result are shown.

use kube::{Resource, ResourceExt};
use providers_shared::api::{JobResult, Workspace};

use crate::{output::resource_name, table::or_dash};

/// `workspace.providers.platform.dev/NAME`.
pub fn name_of(ws: &Workspace) -> String {
    resource_name("Workspace", &Workspace::group(&()), &ws.name_any())
}

/// The version a Workspace runs or asks for.
pub(super) fn version(ws: &Workspace) -> String {
    match (&ws.spec.plan, &ws.spec.version) {
        (Some(plan), _) => plan.plan.version.clone(),
        (None, Some(asked)) => asked.clone(),
        (None, None) => "<recipe default>".to_owned(),
    }
}

pub(super) fn result_word(result: Option<JobResult>) -> String {
    or_dash(result.map(|result| format!("{result:?}")))
}
