//! What the edge caches keep of an object: the marks a decision reads
//! (`providers_shared::installer::ObjectState`), Helm's record labels, and no more.
//!
//! An edge with a thousand Workspaces holds about ten thousand cached objects. kube's
//! reflector keeps each whole (an `ObjectMeta` of some 500 bytes, a `BTreeMap` node per
//! label and annotation map, a `String` per value, a key that copies the name): about
//! 1.6 KB an object, measured (docs/performance.md). Kept here, the same object takes a
//! few hundred bytes.

use k8s_openapi::{
    api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::ObjectMeta,
    apimachinery::pkg::apis::meta::v1::Time,
};
use providers_shared::installer::{JobOutcome, JobState, ObjectState, job_state};

use super::packed_pairs::PackedPairs;

/// The prefix of the annotations the installer reads on the objects it caches.
const OWN_ANNOTATIONS: &str = "providers.platform.dev/";
/// The longest value of such an annotation kept: the installer writes names and digests;
/// anyone who may write the object could write megabytes under the prefix.
const MAX_OWN_ANNOTATION: usize = 1024;

/// An object's metadata, compacted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct CompactMeta {
    name: Box<str>,
    namespace: Option<Box<str>>,
    uid: Box<str>,
    resource_version: Box<str>,
    created: Option<Time>,
    deleting: bool,
    labels: PackedPairs,
    /// Only the installer's own (another's may hold a Secret's whole data: `kubectl
    /// apply`'s last applied configuration, which the hub must not keep).
    annotations: PackedPairs,
    finalizers: Box<[Box<str>]>,
    /// Of owner references only the owners' UIDs are read; their names are not validated
    /// by the API server and can be megabytes.
    owner_uids: Box<[Box<str>]>,
}

impl CompactMeta {
    pub(super) fn new(meta: &ObjectMeta) -> Self {
        let boxed = |s: &Option<String>| s.as_deref().unwrap_or_default().into();
        Self {
            name: boxed(&meta.name),
            namespace: meta.namespace.as_deref().map(Into::into),
            uid: boxed(&meta.uid),
            resource_version: boxed(&meta.resource_version),
            created: meta.creation_timestamp.clone(),
            deleting: meta.deletion_timestamp.is_some(),
            labels: PackedPairs::new(
                meta.labels
                    .iter()
                    .flatten()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            ),
            annotations: PackedPairs::new(
                meta.annotations
                    .iter()
                    .flatten()
                    .filter(|(k, v)| {
                        k.starts_with(OWN_ANNOTATIONS) && v.len() <= MAX_OWN_ANNOTATION
                    })
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            ),
            finalizers: meta
                .finalizers
                .iter()
                .flatten()
                .map(|f| f.as_str().into())
                .collect(),
            owner_uids: meta
                .owner_references
                .iter()
                .flatten()
                .map(|r| r.uid.as_str().into())
                .collect(),
        }
    }

    /// What a cache keeps of a metadata-only object.
    pub(super) fn of_partial<K>(object: &kube::core::PartialObjectMeta<K>) -> Self {
        Self::new(&object.metadata)
    }

    pub(super) fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    pub(super) fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key)
    }

    /// The marks a decision reads.
    pub(super) fn state(&self) -> ObjectState {
        ObjectState {
            uid: self.uid.to_string(),
            resource_version: self.resource_version.to_string(),
            labels: self.labels.to_map(),
            annotations: self.annotations.to_map(),
            finalizers: self.finalizers.iter().map(|f| f.to_string()).collect(),
            owner_uids: self.owner_uids.iter().map(|u| u.to_string()).collect(),
            deleting: self.deleting,
        }
    }

    /// The metadata kept, as the API types have it (for what reads an `ObjectMeta`).
    pub(super) fn to_meta(&self) -> ObjectMeta {
        let map = |pairs: &PackedPairs| (!pairs.is_empty()).then(|| pairs.to_map());
        ObjectMeta {
            name: Some(self.name.to_string()),
            namespace: self.namespace.as_deref().map(str::to_owned),
            uid: Some(self.uid.to_string()),
            resource_version: Some(self.resource_version.to_string()),
            creation_timestamp: self.created.clone(),
            labels: map(&self.labels),
            annotations: map(&self.annotations),
            finalizers: (!self.finalizers.is_empty())
                .then(|| self.finalizers.iter().map(|f| f.to_string()).collect()),
            ..Default::default()
        }
    }
}

/// A Job of the installer's, compacted: its metadata and its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct CompactJob {
    pub(super) meta: CompactMeta,
    outcome: JobOutcome,
    finished_at: Option<Time>,
}

impl CompactJob {
    pub(super) fn new(job: &Job) -> Self {
        let state = job_state(job);
        Self {
            meta: CompactMeta::new(&job.metadata),
            outcome: state.outcome,
            finished_at: state.finished_at,
        }
    }

    /// What a decision reads of the Job.
    pub(super) fn state(&self) -> JobState {
        JobState {
            object: self.meta.state(),
            outcome: self.outcome.clone(),
            finished_at: self.finished_at.clone(),
            runner: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn full_meta() -> ObjectMeta {
        serde_json::from_value(serde_json::json!({
            "name": "runner",
            "namespace": "team-a",
            "uid": "u-1",
            "resourceVersion": "42",
            "creationTimestamp": "2026-12-07T00:00:00Z",
            "deletionTimestamp": "2026-12-07T00:01:00Z",
            "labels": { "app.kubernetes.io/managed-by": "providers-installer", "providers.platform.dev/workspace-uid": "w-1" },
            "annotations": {
                "providers.platform.dev/workspace": "org-a/hello",
                "providers.platform.dev/huge": "x".repeat(MAX_OWN_ANNOTATION + 1),
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"token\":\"c2VjcmV0\"}}"
            },
            "finalizers": ["providers.platform.dev/installer"],
            "ownerReferences": [{ "apiVersion": "v1", "kind": "X", "name": "n".repeat(10_000), "uid": "o-1" }],
            "managedFields": [{ "manager": "kubectl-edit", "operation": "Update" }]
        }))
        .unwrap()
    }

    #[test]
    fn a_decision_reads_the_same_marks_from_the_compact_form() {
        let meta = full_meta();
        let compact = CompactMeta::new(&meta);
        let mut expected = ObjectState::from_meta(&meta);
        expected
            .annotations
            .retain(|k, v| k.starts_with(OWN_ANNOTATIONS) && v.len() <= MAX_OWN_ANNOTATION);
        assert_eq!(compact.state(), expected);
        assert_eq!(compact.name(), "runner");
        assert_eq!(compact.namespace(), Some("team-a"));
        assert_eq!(
            compact.label("providers.platform.dev/workspace-uid"),
            Some("w-1")
        );
    }

    #[test]
    fn only_own_short_annotations_and_the_owners_uids_are_kept() {
        let compact = CompactMeta::new(&full_meta());
        let meta = compact.to_meta();
        assert_eq!(
            meta.annotations.unwrap().into_keys().collect::<Vec<_>>(),
            ["providers.platform.dev/workspace"],
            "another's annotation (a last applied configuration) and an oversized own one are dropped"
        );
        assert!(meta.managed_fields.is_none());
        assert_eq!(compact.state().owner_uids, ["o-1"]);
        assert_eq!(meta.uid.as_deref(), Some("u-1"));
        assert_eq!(
            meta.creation_timestamp,
            full_meta().creation_timestamp,
            "Helm's records are ordered by it"
        );
        let unowned = ObjectMeta {
            owner_references: Some(vec![OwnerReference::default()]),
            ..Default::default()
        };
        assert_eq!(CompactMeta::new(&unowned).state().owner_uids, [""]);
    }

    #[test]
    fn a_job_keeps_its_outcome_and_not_its_status() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "attempt", "namespace": "team-a", "uid": "j-1" },
            "status": {
                "conditions": [{
                    "type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                    "lastTransitionTime": "2026-12-07T00:02:00Z"
                }]
            }
        }))
        .unwrap();
        let compact = CompactJob::new(&job);
        let mut expected = job_state(&job);
        expected.object.annotations.clear();
        assert_eq!(compact.state(), expected);
        assert!(matches!(compact.state().outcome, JobOutcome::Failed { .. }));
    }
}
