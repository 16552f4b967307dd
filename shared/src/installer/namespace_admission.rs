//! Namespace admission: the release namespace is created for the Workspace, adopted when
//! an earlier Workspace of its name released it, or refused when someone else owns it.

use crate::api::Plan;

use super::{
    action::{Action, NamespaceChange, Next, Note},
    conditions::{Activity, reason},
    decision_draft::DecisionDraft,
    manifests::{self, Marks},
    names,
    observation::NamespaceState,
    patch,
};

impl DecisionDraft<'_> {
    /// Rules `namespace_is_created_and_recorded`, `namespace_of_someone_else_is_refused`,
    /// `released_namespace_is_adopted`, and `lost_namesakes_objects_wait_for_the_sweep`.
    pub(super) fn admit_namespace(
        &mut self,
        plan: &Plan,
        namespace: Option<&NamespaceState>,
        marks: &Marks,
    ) -> Admission {
        let Some(ns) = namespace else {
            // Prepared in the same pass: if the create fails, nothing after it runs, and the
            // next pass decides from what is there. The namespace is recorded in status
            // with the Job, once it is observed.
            self.edge(Action::CreateNamespace(Box::new(manifests::namespace(
                plan, marks,
            ))));
            return Admission::Admitted;
        };
        if ns.deleting {
            self.activity = Activity::idle(
                reason::NAMESPACE_TERMINATING,
                format!(
                    "namespace {} on edge {} is being deleted; the attempt waits until it is gone",
                    plan.namespace, plan.edge_name
                ),
            );
            return Admission::Pending(Next::After(15));
        }
        if ns.owned_by(self.uid()) {
            self.record_namespace(true, &ns.uid);
            return Admission::Admitted;
        }
        if ns.label(names::LABEL_RELEASED) == "true"
            && ns.label(names::LABEL_MANAGED_BY) == names::MANAGED_BY
            && ns
                .annotations
                .get(names::ANNOTATION_WORKSPACE)
                .map(String::as_str)
                == Some(self.key())
        {
            self.edge(Action::PatchNamespace {
                name: plan.namespace.clone(),
                patch: patch::adopt_namespace(ns, self.uid()),
                what: NamespaceChange::Adopt,
            });
            self.event(Note::normal(
                "NamespaceAdopted",
                format!(
                    "adopted namespace {} on edge {}, released by an earlier Workspace named {}",
                    plan.namespace,
                    plan.edge_name,
                    self.key()
                ),
            ));
            return Admission::Pending(Next::Continue);
        }
        if self.left_by_lost_namesake(ns) {
            let what = format!("namespace {}", plan.namespace);
            return Admission::Pending(self.wait_for_sweep(&what, ns));
        }
        self.record_namespace(false, &ns.uid);
        let owner = match ns.label(names::LABEL_WORKSPACE_UID) {
            "" => "it carries no ownership label of this installer".to_owned(),
            other => format!("it belongs to the Workspace with UID {other}"),
        };
        self.reject(
            reason::NAMESPACE_NOT_ADMITTED,
            format!(
                "namespace {} on edge {} already exists and is not this Workspace's ({owner}); nothing is installed into a namespace someone else owns, and its owner keeps it. Choose another Workspace name, or ask the platform team whether the namespace is still in use and to remove it if not; then raise spec.retry",
                plan.namespace, plan.edge_name
            ),
        );
        Admission::Pending(self.cleanup())
    }

    /// Records in status whether the namespace with `uid` is admitted.
    fn record_namespace(&mut self, admitted: bool, uid: &str) {
        let status = &mut self.status;
        status.namespace_admission_known = true;
        status.namespace_admitted = admitted;
        status.namespace_uid = Some(uid.to_owned());
    }
}

/// Whether namespace admission lets preparation go on.
pub(super) enum Admission {
    Admitted,
    Pending(Next),
}
