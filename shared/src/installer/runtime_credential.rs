//! The provider's runtime credential: its hub ServiceAccount and RoleBinding, and the
//! kubeconfig Secret minted onto the edge for it.

use crate::{api::Plan, text::object_key};

use super::{
    action::{Action, Deletion, Kind, MintCredential, Next, Note},
    decision_draft::DecisionDraft,
    manifests::{self, Marks},
    names::CredentialNames,
    observation::EdgeObjects,
};

impl DecisionDraft<'_> {
    /// Rule `runtime_credential_is_minted_once`: the provider's hub ServiceAccount, its
    /// RoleBinding and the kubeconfig Secret on the edge, each created only when missing.
    /// Rule `runtime_credential_is_owned_by_uid`: an object that holds one of their names
    /// but is not this Workspace's (by its UID label, and on the hub also its owner
    /// reference), or a RoleBinding to another Role than the plan's, is replaced, never
    /// adopted.
    pub(super) fn runtime_credential(
        &mut self,
        plan: &Plan,
        edge_objects: &EdgeObjects,
        marks: &Marks,
    ) -> Option<Next> {
        let credential = plan.runtime_credential.as_ref()?;
        let names = CredentialNames::for_workspace(&plan.org, &plan.workspace.name);
        let Some(hub) = self.observation().hub.clone() else {
            return Some(Next::Continue);
        };
        let uid = self.uid().to_owned();
        // The hub ServiceAccount and its RoleBinding share a name.
        let hub_key = object_key(&names.hub_namespace, &names.service_account);
        let secret_key = object_key(&plan.namespace, &names.edge_secret);
        let mut replacing = Vec::new();
        if let Some(sa) = &hub.service_account
            && !sa.owned_on_hub_by(&uid)
        {
            replacing.push(format!("ServiceAccount {hub_key}"));
            self.delete_on_hub(Kind::ServiceAccount, &names, &sa.uid);
        }
        if let Some(rb) = &hub.role_binding
            && (!rb.owned_on_hub_by(&uid)
                || hub.role_binding_role.as_deref() != Some(credential.role.as_str()))
        {
            replacing.push(format!(
                "RoleBinding {hub_key} (to Role {:?})",
                hub.role_binding_role.as_deref().unwrap_or_default()
            ));
            self.delete_on_hub(Kind::RoleBinding, &names, &rb.uid);
        }
        if let Some(secret) = &edge_objects.runtime_credential
            && !secret.owned_by(&uid)
        {
            replacing.push(format!("Secret {secret_key} on edge {}", plan.edge_name));
            self.delete_on_edge(
                Kind::Secret,
                &plan.namespace,
                &names.edge_secret,
                &secret.uid,
            );
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
        if edge_objects.runtime_credential.is_none() {
            self.edge(Action::MintRuntimeCredential(Box::new(MintCredential {
                hub_namespace: names.hub_namespace.clone(),
                service_account: names.service_account.clone(),
                secret: manifests::runtime_credential_secret(plan, &names, marks),
            })));
            self.event(Note::normal(
                "RuntimeCredentialMinted",
                format!(
                    "minted the provider's hub credential (ServiceAccount {hub_key}, Role {}) into Secret {secret_key} on edge {}",
                    credential.role, plan.edge_name
                ),
            ));
        }
        None
    }

    /// Queues the deletion of the hub object `kind` that holds the name of the provider's
    /// ServiceAccount, guarded by its UID.
    fn delete_on_hub(&mut self, kind: Kind, names: &CredentialNames, uid: &str) {
        self.actions.push(Action::DeleteOnHub(Deletion {
            kind,
            namespace: names.hub_namespace.clone(),
            name: names.service_account.clone(),
            uid: uid.to_owned(),
        }));
    }
}
