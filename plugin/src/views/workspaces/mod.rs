//! `status`, `history` and `target`: a Workspace's attempts and where it installs.

mod history;
mod status;
mod target;
#[cfg(test)]
mod tests;

use kube::{Resource, ResourceExt};
use providers::api::{JobResult, Workspace};

pub use self::{
    history::history,
    status::{status_detail, status_list},
    target::target,
};
use crate::{output::resource_name, table::or_dash};

/// `workspace.providers.platform.dev/NAME`.
pub fn name_of(ws: &Workspace) -> String {
    resource_name("Workspace", &Workspace::group(&()), &ws.name_any())
}

/// The version a Workspace runs or asks for.
fn version(ws: &Workspace) -> String {
    match (&ws.spec.plan, &ws.spec.version) {
        (Some(plan), _) => plan.plan.version.clone(),
        (None, Some(asked)) => asked.clone(),
        (None, None) => "<recipe default>".to_owned(),
    }
}

fn result_word(result: Option<JobResult>) -> String {
    or_dash(result.map(|result| format!("{result:?}")))
}
