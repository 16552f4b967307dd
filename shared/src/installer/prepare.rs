//! Preparation: the preparation record, namespace admission, the provider's runtime
//! credential, the runner's identity and values, a pending release, then the Job.

use sha2::{Digest, Sha256};

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::SignedDuration};

use crate::api::{Plan, Preparation};

use super::{
    action::{Action, Deletion, EdgeObject, Kind, MintCredential, NamespaceChange, Next, Note},
    conditions::{Outlook, reason},
    machine::Machine,
    manifests::{self, Marks},
    names::{self, AttemptNames, CredentialNames},
    observed::{Authorization, EdgeState, NamespaceState, ObjectState, Remote, SealCheck},
    patch,
};

impl Machine<'_> {
    /// Rules `seal_is_checked_before_creating`, `preparation_is_recorded_first`,
    /// `expired_preparation_is_redone`, then namespace admission, the credential, the
    /// identity and the Job.
    pub fn prepare(&mut self, plan: &Plan, remote: &Remote) -> Next {
        let refused = match &self.o.seal {
            SealCheck::Verified => None,
            SealCheck::KeysUnavailable(why) => {
                self.outlook = Outlook::idle(
                    reason::KEYS_UNAVAILABLE,
                    format!("cannot verify the seal before creating anything: {why}"),
                );
                return Next::After(30);
            }
            SealCheck::Invalid(why) => Some(why.clone()),
            SealCheck::NoPlan => Some("there is no plan".to_owned()),
        };
        if let Some(why) = refused {
            self.reject(
                reason::SEAL_INVALID,
                format!(
                    "attempt {}: the seal does not verify ({why}); nothing more is created for it",
                    plan.attempt
                ),
            );
            return self.cleanup();
        }
        if let EdgeState::Ready(route) = &self.o.edge
            && (route.cluster != plan.cluster || route.workspace_uuid != plan.edge_workspace_uuid)
        {
            self.reject(
                reason::TARGET_MISMATCH,
                format!(
                    "attempt {} was sealed for cluster {} of edge workspace {}, but Edge {} is now cluster {} of edge workspace {}; change the Workspace so a new plan is sealed",
                    plan.attempt,
                    plan.cluster,
                    plan.edge_workspace_uuid,
                    plan.edge_name,
                    route.cluster,
                    route.workspace_uuid
                ),
            );
            return self.cleanup();
        }
        self.outlook = Outlook::busy(
            reason::PREPARING,
            format!(
                "attempt {}: preparing namespace {}, the runner's identity and values on edge {}",
                plan.attempt, plan.namespace, plan.edge_name
            ),
        );

        if self.status.preparation.is_none()
            && let Some(next) = self.authorized(plan)
        {
            return next;
        }
        let (preparation, removing) = self.preparation(plan, remote);
        if removing {
            // An expired preparation is being removed; prepare afresh once it is gone.
            return Next::Continue;
        }
        let marks = Marks {
            workspace_uid: self.uid.clone(),
            workspace_key: self.key.clone(),
            attempt: plan.attempt,
            attempt_id: plan.attempt_id.clone(),
            preparation_id: preparation,
        };

        match self.admit_namespace(plan, remote.namespace.as_ref(), &marks) {
            Admission::Admitted => {}
            Admission::Pending(next) => return next,
        }
        if let Some(next) = self.runtime_credential(plan, remote, &marks) {
            return next;
        }
        self.recover_release(plan, remote);

        let names = AttemptNames::for_job(&plan.job);
        let mut wanted: Vec<(Kind, &Option<ObjectState>, EdgeObject)> = vec![
            (
                Kind::ServiceAccount,
                &remote.service_account,
                EdgeObject::ServiceAccount(manifests::runner_service_account(plan, &names, &marks)),
            ),
            (
                Kind::Role,
                &remote.role,
                EdgeObject::Role(manifests::runner_role(plan, &names, &marks)),
            ),
            (
                Kind::RoleBinding,
                &remote.role_binding,
                EdgeObject::RoleBinding(manifests::runner_role_binding(plan, &names, &marks)),
            ),
        ];
        // Values small enough ride in the Job itself (manifests::values_in_job).
        if !manifests::values_in_job(plan) {
            wanted.push((
                Kind::Secret,
                &remote.values,
                EdgeObject::Secret(manifests::values_secret(plan, &names, &marks)),
            ));
        }
        let mut stale = false;
        for (kind, observed, object) in wanted {
            let name = match kind {
                Kind::Secret => &names.values,
                _ => &names.runner,
            };
            match observed {
                None => self.edge(Action::Create(Box::new(object))),
                Some(o)
                    if o.of_attempt(&self.uid, &plan.attempt_id)
                        && o.label(names::LABEL_PREPARATION_ID)
                            == names::label_value(&marks.preparation_id) => {}
                Some(o) if o.owned_by(&self.uid) => {
                    // Left by another preparation of this Workspace: replace it.
                    stale = true;
                    self.edge(Action::Delete(Deletion {
                        kind,
                        namespace: plan.namespace.clone(),
                        name: name.clone(),
                        uid: o.uid.clone(),
                    }));
                }
                Some(o) => {
                    self.reject(
                        reason::JOB_CONFLICT,
                        format!(
                            "{kind:?} {}/{name} exists on edge {} and is not this Workspace's (labelled for Workspace UID {:?}); remove it, then raise spec.retry",
                            plan.namespace,
                            plan.edge_name,
                            o.label(names::LABEL_WORKSPACE_UID)
                        ),
                    );
                    return self.cleanup();
                }
            }
        }
        if stale {
            return Next::Continue;
        }
        self.edge(Action::Create(Box::new(EdgeObject::Job(Box::new(
            manifests::job(plan, &names, &marks, self.settings),
        )))));
        Next::Continue
    }

    /// Rule `authorization_is_asked_again_before_start`: before the first preparation of
    /// an attempt (the first use of the edge credential for it), RBAC must still let the
    /// plan's owner install onto its edge. `None` when it does.
    fn authorized(&mut self, plan: &Plan) -> Option<Next> {
        match &self.o.authorization {
            Authorization::Allowed => None,
            Authorization::NotAsked => Some(Next::Continue),
            Authorization::Unavailable(why) => {
                self.outlook = Outlook::idle(
                    reason::AUTHORIZATION_UNAVAILABLE,
                    format!(
                        "attempt {}: cannot ask whether {} may still install onto edge {}: {why}; asking again shortly",
                        plan.attempt, plan.owner.username, plan.edge_name
                    ),
                );
                Some(Next::After(10))
            }
            Authorization::Denied(why) => {
                self.reject(
                    reason::NOT_AUTHORIZED,
                    format!(
                        "attempt {} is not run: {why}. The permission was checked when the plan was sealed and again before anything was created; nothing was created on the edge. Once the platform team grants it again, raise spec.retry",
                        plan.attempt
                    ),
                );
                Some(self.cleanup())
            }
        }
    }

    /// The preparation ID to label objects with; starts a new preparation when there is
    /// none or the recorded one expired without its Job (and queues removal of the
    /// expired one's objects, saying so).
    fn preparation(&mut self, plan: &Plan, remote: &Remote) -> (String, bool) {
        let current = self.status.preparation.clone();
        if let Some(p) = &current
            && p.preparation_expires_at.0 > self.o.now
        {
            return (p.preparation_id.clone(), false);
        }
        let previous = current
            .as_ref()
            .map(|p| p.preparation_id.clone())
            .unwrap_or_default();
        let id = preparation_id(&plan.attempt_id, &previous, &self.o.now.to_string());
        let expires = self
            .o
            .now
            .checked_add(SignedDuration::from_secs(
                self.settings.preparation_ttl_seconds,
            ))
            .unwrap_or(self.o.now);
        self.status.preparation = Some(Preparation {
            preparation_id: id.clone(),
            preparation_expires_at: Time(expires),
        });
        let mut removing = false;
        if current.is_some() {
            self.event(Note::warning(
                "PreparationExpired",
                format!(
                    "attempt {}: preparation {previous} expired before its Job was created; removing what it made and preparing afresh as {id}",
                    plan.attempt
                ),
            ));
            let names = AttemptNames::for_job(&plan.job);
            let old = names::label_value(&previous);
            for (kind, observed, name) in [
                (Kind::ServiceAccount, &remote.service_account, &names.runner),
                (Kind::Role, &remote.role, &names.runner),
                (Kind::RoleBinding, &remote.role_binding, &names.runner),
                (Kind::Secret, &remote.values, &names.values),
            ] {
                if let Some(o) = observed
                    && o.owned_by(&self.uid)
                    && o.label(names::LABEL_PREPARATION_ID) == old
                {
                    removing = true;
                    self.edge(Action::Delete(Deletion {
                        kind,
                        namespace: plan.namespace.clone(),
                        name: name.clone(),
                        uid: o.uid.clone(),
                    }));
                }
            }
        }
        (id, removing)
    }

    /// Rules `namespace_is_created_and_recorded`, `namespace_of_someone_else_is_refused`,
    /// `released_namespace_is_adopted`.
    fn admit_namespace(
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
            self.outlook = Outlook::idle(
                reason::NAMESPACE_TERMINATING,
                format!(
                    "namespace {} on edge {} is being deleted; the attempt waits until it is gone",
                    plan.namespace, plan.edge_name
                ),
            );
            return Admission::Pending(Next::After(15));
        }
        if ns.owned_by(&self.uid) {
            let s = &mut self.status;
            s.namespace_admission_known = true;
            s.namespace_admitted = true;
            s.namespace_uid = Some(ns.uid.clone());
            return Admission::Admitted;
        }
        if ns.label(names::LABEL_RELEASED) == "true"
            && ns.label(names::LABEL_MANAGED_BY) == names::MANAGED_BY
            && ns.annotations.get(names::ANNOTATION_WORKSPACE) == Some(&self.key)
        {
            self.edge(Action::PatchNamespace {
                name: plan.namespace.clone(),
                patch: patch::adopt_namespace(ns, &self.uid),
                what: NamespaceChange::Adopt,
            });
            self.event(Note::normal(
                "NamespaceAdopted",
                format!(
                    "adopted namespace {} on edge {}, released by an earlier Workspace named {}",
                    plan.namespace, plan.edge_name, self.key
                ),
            ));
            return Admission::Pending(Next::Continue);
        }
        let s = &mut self.status;
        s.namespace_admission_known = true;
        s.namespace_admitted = false;
        s.namespace_uid = Some(ns.uid.clone());
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

    /// Rule `runtime_credential_is_minted_once`: the provider's hub ServiceAccount, its
    /// RoleBinding and the kubeconfig Secret on the edge, each created only when missing.
    /// Rule `runtime_credential_is_owned_by_uid`: an object that holds one of their names
    /// but is not this Workspace's (by its UID label, and on the hub also its owner
    /// reference), or a RoleBinding to another Role than the plan's, is replaced, never
    /// adopted.
    fn runtime_credential(&mut self, plan: &Plan, remote: &Remote, marks: &Marks) -> Option<Next> {
        let credential = plan.runtime_credential.as_ref()?;
        let names = CredentialNames::for_workspace(&plan.org, &plan.workspace.name);
        let Some(hub) = self.o.hub.clone() else {
            return Some(Next::Continue);
        };
        let uid = self.uid.clone();
        let mut replacing = Vec::new();
        if let Some(sa) = &hub.service_account
            && !sa.owned_on_hub_by(&uid)
        {
            replacing.push(format!(
                "ServiceAccount {}/{}",
                names.hub_namespace, names.service_account
            ));
            self.actions.push(Action::DeleteOnHub(Deletion {
                kind: Kind::ServiceAccount,
                namespace: names.hub_namespace.clone(),
                name: names.service_account.clone(),
                uid: sa.uid.clone(),
            }));
        }
        if let Some(rb) = &hub.role_binding
            && (!rb.owned_on_hub_by(&uid)
                || hub.role_binding_role.as_deref() != Some(credential.role.as_str()))
        {
            replacing.push(format!(
                "RoleBinding {}/{} (to Role {:?})",
                names.hub_namespace,
                names.service_account,
                hub.role_binding_role.as_deref().unwrap_or_default()
            ));
            self.actions.push(Action::DeleteOnHub(Deletion {
                kind: Kind::RoleBinding,
                namespace: names.hub_namespace.clone(),
                name: names.service_account.clone(),
                uid: rb.uid.clone(),
            }));
        }
        if let Some(secret) = &remote.runtime_credential
            && !secret.owned_by(&uid)
        {
            replacing.push(format!(
                "Secret {}/{} on edge {}",
                plan.namespace, names.edge_secret, plan.edge_name
            ));
            self.edge(Action::Delete(Deletion {
                kind: Kind::Secret,
                namespace: plan.namespace.clone(),
                name: names.edge_secret.clone(),
                uid: secret.uid.clone(),
            }));
        }
        if !replacing.is_empty() {
            self.event(Note::warning(
                "RuntimeCredentialReplaced",
                format!(
                    "{} held the name of the provider's credential but {} not this Workspace's (or bound another Role than {:?}); replacing {}",
                    replacing.join(", "),
                    if replacing.len() == 1 { "was" } else { "were" },
                    credential.role,
                    if replacing.len() == 1 { "it" } else { "them" },
                ),
            ));
            return Some(Next::Continue);
        }
        if hub.service_account.is_none() {
            self.actions.push(Action::CreateHubServiceAccount(Box::new(
                manifests::hub_service_account(&names, marks),
            )));
        }
        if hub.role_binding.is_none() {
            self.actions.push(Action::CreateHubRoleBinding(Box::new(
                manifests::hub_role_binding(&names, &credential.role, marks),
            )));
        }
        self.status.runtime_credential_secret = Some(names.edge_secret.clone());
        if remote.runtime_credential.is_none() {
            self.edge(Action::MintRuntimeCredential(Box::new(MintCredential {
                hub_namespace: names.hub_namespace.clone(),
                service_account: names.service_account.clone(),
                secret: manifests::runtime_credential_secret(plan, &names, marks),
            })));
            self.event(Note::normal(
                "RuntimeCredentialMinted",
                format!(
                    "minted the provider's hub credential (ServiceAccount {}/{}, Role {}) into Secret {}/{} on edge {}",
                    names.hub_namespace,
                    names.service_account,
                    credential.role,
                    plan.namespace,
                    names.edge_secret,
                    plan.edge_name
                ),
            ));
        }
        None
    }

    /// Rule `pending_release_is_recovered`: a release revision left pending by a killed
    /// Helm blocks every later Helm run. No Helm of this Workspace can still hold it: the
    /// previous attempt's Job ended and its identity is revoked before a new attempt
    /// prepares. So it is marked failed, as Helm marks it when interrupted gracefully.
    fn recover_release(&mut self, plan: &Plan, remote: &Remote) {
        let Some(revision) = remote.release.as_ref().filter(|r| r.is_pending()) else {
            return;
        };
        let message = format!(
            "release {} revision {} in namespace {} on edge {} was left {} by an interrupted Helm run; marked it failed so attempt {} can upgrade it",
            plan.release,
            revision.revision,
            plan.namespace,
            plan.edge_name,
            revision.status,
            plan.attempt
        );
        self.edge(Action::MarkReleaseFailed {
            namespace: plan.namespace.clone(),
            secret: revision.secret.clone(),
            uid: revision.uid.clone(),
            revision: revision.revision,
            description: format!(
                "interrupted while {}: marked failed by the installer before attempt {}",
                revision.status, plan.attempt
            ),
        });
        self.event(Note::warning("ReleaseRecovered", message));
    }
}

/// Whether namespace admission lets preparation go on.
enum Admission {
    Admitted,
    Pending(Next),
}

/// A preparation ID: unique per attempt and preparation, derived from its inputs.
pub fn preparation_id(attempt_id: &str, previous: &str, now: &str) -> String {
    let digest = Sha256::new()
        .chain_update(attempt_id.as_bytes())
        .chain_update([0])
        .chain_update(previous.as_bytes())
        .chain_update([0])
        .chain_update(now.as_bytes())
        .finalize();
    hex::encode(&digest[..8])
}
