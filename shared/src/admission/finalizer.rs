//! The installer's finalizer, added by the mutating webhook when it seals an attempt, so
//! that the installer need not write it before the attempt's first step (ADR 28).

use json_patch::{AddOperation, PatchOperation, jsonptr::PointerBuf};
use serde_json::json;

use crate::{api::Workspace, installer::names::FINALIZER};

/// The patch operation that adds the installer's finalizer to `workspace`, or `None` when
/// it is there already. Appends to a list the request carries, so no other finalizer is
/// lost or reordered.
pub fn finalizer_patch(workspace: &Workspace) -> Option<PatchOperation> {
    let finalizers = workspace.metadata.finalizers.as_deref();
    if finalizers.is_some_and(|f| f.iter().any(|f| f == FINALIZER)) {
        return None;
    }
    let (path, value) = match finalizers {
        Some(_) => (
            PointerBuf::from_tokens(["metadata", "finalizers", "-"]),
            json!(FINALIZER),
        ),
        None => (
            PointerBuf::from_tokens(["metadata", "finalizers"]),
            json!([FINALIZER]),
        ),
    };
    Some(PatchOperation::Add(AddOperation { path, value }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;

    fn applied(mut workspace: Workspace) -> Vec<String> {
        let mut value = serde_json::to_value(&workspace).unwrap();
        if let Some(op) = finalizer_patch(&workspace) {
            json_patch::patch(&mut value, &[op]).unwrap();
        }
        workspace = serde_json::from_value(value).unwrap();
        workspace.metadata.finalizers.unwrap_or_default()
    }

    fn workspace(finalizers: Option<Vec<&str>>) -> Workspace {
        let mut ws = testing::workspace("ws", testing::workspace_spec());
        ws.metadata.finalizers = finalizers.map(|f| f.into_iter().map(String::from).collect());
        ws
    }

    #[test]
    fn adds_the_finalizer_to_a_workspace_without_any() {
        assert_eq!(applied(workspace(None)), [FINALIZER]);
        assert_eq!(applied(workspace(Some(vec![]))), [FINALIZER]);
    }

    #[test]
    fn appends_after_the_finalizers_the_request_carries() {
        assert_eq!(
            applied(workspace(Some(vec!["example.com/keep"]))),
            ["example.com/keep", FINALIZER]
        );
    }

    #[test]
    fn leaves_a_workspace_that_has_it_alone() {
        assert!(finalizer_patch(&workspace(Some(vec!["a", FINALIZER]))).is_none());
    }
}
