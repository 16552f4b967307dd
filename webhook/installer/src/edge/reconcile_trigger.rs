//! Whom a change of an edge wakes: the Workspaces that target it, all of them, or one.

use futures::channel::mpsc::UnboundedSender;
use kube::runtime::reflector::{ObjectRef, Store};
use providers_shared::api::Workspace;

/// Triggers reconciles of Workspaces.
#[derive(Clone)]
pub(super) struct ReconcileTrigger {
    pub(super) store: Store<Workspace>,
    pub(super) trigger: UnboundedSender<ObjectRef<Workspace>>,
}

impl ReconcileTrigger {
    pub(super) fn edge(&self, edge: &str) {
        for workspace in self.store.state() {
            let targets = workspace.spec.edge == edge
                || workspace
                    .spec
                    .plan
                    .as_ref()
                    .is_some_and(|p| p.plan.edge_name == edge)
                || workspace
                    .status
                    .as_ref()
                    .and_then(|s| s.target.as_ref())
                    .is_some_and(|t| t.edge == edge);
            if targets {
                let _ = self
                    .trigger
                    .unbounded_send(ObjectRef::from_obj(&*workspace));
            }
        }
    }

    pub(super) fn all(&self) {
        for workspace in self.store.state() {
            let _ = self
                .trigger
                .unbounded_send(ObjectRef::from_obj(&*workspace));
        }
    }

    pub(super) fn workspace(&self, key: &str) {
        if let Some((namespace, name)) = key.split_once('/') {
            let _ = self
                .trigger
                .unbounded_send(ObjectRef::new(name).within(namespace));
        }
    }
}
