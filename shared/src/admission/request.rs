//! One admission request for a Workspace, and what both webhooks check of it first.

use k8s_openapi::{api::authentication::v1::UserInfo, jiff::Timestamp};

use crate::{
    api::{Workspace, WorkspaceIdentity},
    verify::Binding,
};

use super::denial::Denial;

/// The longest chart version accepted in a Workspace (the CRD says the same).
pub const MAX_VERSION_BYTES: usize = 128;

/// The operations the webhooks review.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
}

/// One admission request for a Workspace.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub operation: Operation,
    pub user: &'a UserInfo,
    pub object: &'a Workspace,
    pub old: Option<&'a Workspace>,
    /// Whether the request is a dry run: a plan sealed for it says so and never runs.
    pub dry_run: bool,
    /// When the request is reviewed: the seal time of a plan sealed for it.
    pub now: Timestamp,
}

impl Request<'_> {
    /// The identity the plan of a new attempt is bound to. The UID is empty on CREATE,
    /// where the API server assigns it only after mutating admission.
    pub fn workspace_identity(&self) -> WorkspaceIdentity {
        let meta = &self.object.metadata;
        WorkspaceIdentity {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta
                .uid
                .clone()
                .or_else(|| self.old.and_then(|o| o.metadata.uid.clone()))
                .unwrap_or_default(),
        }
    }

    /// The attempt ID a new attempt `attempt` sealed for this request has.
    pub fn attempt_id(&self, attempt: i64) -> String {
        self.attempt_id_for(attempt, &self.object.spec)
    }

    /// The attempt ID of a new attempt `attempt` sealed for this request with the intent
    /// `intent` (a rollback's is the intent it restores).
    pub fn attempt_id_for(&self, attempt: i64, intent: &crate::api::WorkspaceSpec) -> String {
        let old_version = self
            .old
            .and_then(|o| o.metadata.resource_version.as_deref())
            .unwrap_or_default();
        let user = self.user.username.as_deref().unwrap_or_default();
        crate::plan::attempt_id(
            &self.workspace_identity(),
            attempt,
            old_version,
            intent,
            user,
        )
    }

    /// What both webhooks check first, before anything costs more than a glance: the
    /// Workspace has a name (the plan is sealed for it) that the API server would accept,
    /// and the tenant's intent is within its bounds. The mutating webhook sees the object
    /// before the API server has validated it, so nothing here may be taken as bounded.
    pub fn require_name(&self) -> Result<(), Denial> {
        let name = match self.object.metadata.name.as_deref() {
            Some(name) if !name.is_empty() => name,
            _ => return Err(Denial::NameRequired),
        };
        if !is_object_name(name) {
            return Err(Denial::InvalidName {
                field: "metadata.name",
                name: crate::text::quoted(name),
            });
        }
        let intent = &self.object.spec;
        if let Some(version) = &intent.version
            && version.len() > MAX_VERSION_BYTES
        {
            return Err(Denial::Resolve(crate::plan::ResolveError::VersionTooLong {
                length: version.len(),
                max: MAX_VERSION_BYTES,
            }));
        }
        if let Some(serde_json::Value::Object(values)) = &intent.values {
            crate::tenant_values::within_limits(values)
                .map_err(|e| Denial::Resolve(crate::plan::ResolveError::Values(e)))?;
        }
        Ok(())
    }

    /// The Workspace a plan in this request must be bound to.
    pub fn binding(&self) -> Binding<'_> {
        let mut binding = binding_of(self.object);
        binding.dry_run = self.dry_run;
        if binding.uid.is_empty()
            && let Some(old) = self.old
        {
            binding.uid = old.metadata.uid.as_deref().unwrap_or_default();
        }
        binding
    }

    /// `namespace/name` of the object, for messages.
    pub fn workspace_key(&self) -> String {
        let id = self.workspace_identity();
        crate::text::object_key(&id.namespace, &id.name)
    }
}

/// The binding of a stored or submitted Workspace: its namespace, name, UID and creation
/// time, as far as it has them.
pub fn binding_of(workspace: &Workspace) -> Binding<'_> {
    let meta = &workspace.metadata;
    Binding {
        namespace: meta.namespace.as_deref().unwrap_or_default(),
        name: meta.name.as_deref().unwrap_or_default(),
        uid: meta.uid.as_deref().unwrap_or_default(),
        created: meta.creation_timestamp.as_ref().map(|t| t.0),
        dry_run: false,
    }
}

/// Whether `name` can name a cluster-scoped object: a DNS subdomain (RFC 1123), as the API
/// server requires of Recipe and Edge names.
pub fn is_object_name(name: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            label.starts_with(alphanumeric)
                && label.ends_with(alphanumeric)
                && label.chars().all(|c| alphanumeric(c) || c == '-')
        })
}
