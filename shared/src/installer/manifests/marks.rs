//! The ownership marks every object the installer creates carries, as labels,
//! annotations and owner references.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::api::{GROUP, VERSION};

use crate::installer::names;

/// The ownership marks every object of an attempt carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marks {
    pub workspace_uid: String,
    pub workspace_key: String,
    pub attempt: i64,
    pub attempt_id: String,
    pub preparation_id: String,
}

impl Marks {
    /// The labels of an attempt's objects: the owner's, the preparation's and the attempt's.
    pub(super) fn labels(&self) -> BTreeMap<String, String> {
        labelled(
            self.preparation_labels(),
            names::LABEL_ATTEMPT_ID,
            &self.attempt_id,
        )
    }

    /// The owner's labels and the preparation's ID.
    pub(super) fn preparation_labels(&self) -> BTreeMap<String, String> {
        labelled(
            self.owner_labels(),
            names::LABEL_PREPARATION_ID,
            &self.preparation_id,
        )
    }

    fn owner_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (names::LABEL_MANAGED_BY.into(), names::MANAGED_BY.into()),
            (
                names::LABEL_WORKSPACE_UID.into(),
                self.workspace_uid.clone(),
            ),
        ])
    }

    pub(super) fn annotations(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (
                names::ANNOTATION_WORKSPACE.into(),
                self.workspace_key.clone(),
            ),
            (names::ANNOTATION_ATTEMPT.into(), self.attempt.to_string()),
        ])
    }

    /// Metadata of an object the Workspace owns (it outlives every attempt).
    pub(super) fn owner_meta(&self, name: &str, namespace: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: namespace.map(str::to_owned),
            labels: Some(self.owner_labels()),
            annotations: Some(BTreeMap::from([(
                names::ANNOTATION_WORKSPACE.into(),
                self.workspace_key.clone(),
            )])),
            ..Default::default()
        }
    }

    /// Metadata of a hub object the Workspace owns: also an owner reference to it, so the
    /// object is its, and goes with it, by UID.
    pub(super) fn hub_meta(&self, name: &str, namespace: &str) -> ObjectMeta {
        let workspace = self
            .workspace_key
            .split_once('/')
            .map(|(_, name)| name)
            .unwrap_or_default();
        ObjectMeta {
            owner_references: Some(vec![OwnerReference {
                api_version: format!("{GROUP}/{VERSION}"),
                kind: "Workspace".into(),
                name: workspace.to_owned(),
                uid: self.workspace_uid.clone(),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..self.owner_meta(name, Some(namespace))
        }
    }

    pub(super) fn meta(&self, name: &str, namespace: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(self.labels()),
            annotations: Some(self.annotations()),
            ..Default::default()
        }
    }
}

/// `labels` and the label `key` with `value` as a label value.
fn labelled(
    mut labels: BTreeMap<String, String>,
    key: &str,
    value: &str,
) -> BTreeMap<String, String> {
    labels.insert(key.to_owned(), names::label_value(value));
    labels
}
