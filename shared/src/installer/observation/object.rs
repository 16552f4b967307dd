//! What a decision reads of any object: its identity and the installer's ownership marks.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::installer::names;

/// An object's identity and ownership marks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectState {
    pub uid: String,
    pub resource_version: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub finalizers: Vec<String>,
    /// The UIDs of its owner references.
    pub owner_uids: Vec<String>,
    pub deleting: bool,
}

impl ObjectState {
    /// The marks of an object from its metadata.
    pub fn from_meta(meta: &ObjectMeta) -> Self {
        Self {
            uid: meta.uid.clone().unwrap_or_default(),
            resource_version: meta.resource_version.clone().unwrap_or_default(),
            labels: meta.labels.clone().unwrap_or_default(),
            annotations: meta.annotations.clone().unwrap_or_default(),
            finalizers: meta.finalizers.clone().unwrap_or_default(),
            owner_uids: meta
                .owner_references
                .iter()
                .flatten()
                .map(|r| r.uid.clone())
                .collect(),
            deleting: meta.deletion_timestamp.is_some(),
        }
    }

    /// A label's value, or "".
    pub fn label(&self, key: &str) -> &str {
        self.labels.get(key).map(String::as_str).unwrap_or_default()
    }

    /// Whether the object carries the ownership label of the Workspace with `uid`.
    pub fn owned_by(&self, uid: &str) -> bool {
        !uid.is_empty() && self.label(names::LABEL_WORKSPACE_UID) == uid
    }

    /// Whether a hub object belongs to the Workspace with `uid`: it carries its ownership
    /// label and an owner reference to it. Anyone who may write objects in an organization's
    /// namespace can set a label; the pair is what the installer itself writes.
    pub fn owned_on_hub_by(&self, uid: &str) -> bool {
        self.owned_by(uid) && self.owner_uids.iter().any(|o| o == uid)
    }

    /// Whether the object belongs to the attempt `attempt_id` of the Workspace `uid`.
    pub fn of_attempt(&self, uid: &str, attempt_id: &str) -> bool {
        self.owned_by(uid) && self.label(names::LABEL_ATTEMPT_ID) == names::label_value(attempt_id)
    }
}

/// The release namespace on the edge.
pub type NamespaceState = ObjectState;

/// The marks of a typed object, for the shell.
pub fn state_of<K: kube::Resource>(object: &K) -> ObjectState {
    ObjectState::from_meta(object.meta())
}
