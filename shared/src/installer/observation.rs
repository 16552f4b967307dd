//! What the installer observed before deciding: the inputs of [`super::decide`].

use k8s_openapi::jiff::Timestamp;

use crate::{admission::binding_of, api::Workspace, seal::Keyring, verify::verify_plan};

mod job;
mod object;
mod release;

pub use job::{JobOutcome, JobState, RunnerPod, job_state, runner_pod};
pub use object::{NamespaceState, ObjectState, state_of};
pub use release::{ReleaseContent, ReleaseRevision, newest_revision};

use super::{action::Kind, names::AttemptNames};

/// Everything one decision is taken from.
#[derive(Clone, Debug)]
pub struct Observation<'a> {
    /// The Workspace, read fresh from the hub (never from a watch cache alone).
    pub workspace: &'a Workspace,
    /// The signature check of `spec.plan`, by the published keys.
    pub seal: SealCheck,
    /// The plan's target edge, as the installer knows it.
    pub edge: EdgeState,
    /// The attempt's objects on the edge; `None` when they were not read (the edge is not
    /// Ready, or nothing on it is needed).
    pub edge_objects: Option<EdgeObjects>,
    /// The provider's runtime credential objects on the hub; `None` when not read.
    pub hub: Option<HubObjects>,
    /// RBAC's answer for the plan's owner on the plan's edge, asked again before the
    /// attempt's first preparation (see [`super::AttemptReads::authorize`]).
    pub authorization: Authorization,
    /// The plan's values, read by digest while the attempt prepares (see
    /// [`super::AttemptReads::values`]) and when a release made outside the installer is described.
    pub values: ValuesCheck,
    /// The time of the decision.
    pub now: Timestamp,
}

/// Whether the user who started an attempt may still install onto its edge, asked as that
/// user (name, UID, groups and extra as sealed) just before the installer first uses its
/// edge credential for the attempt. An attempt can wait days for its edge; a permission
/// withdrawn meanwhile stops it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Authorization {
    /// Not asked: the decision does not need it.
    #[default]
    NotAsked,
    /// RBAC allows it.
    Allowed,
    /// RBAC refuses it: the reason, as a user reads it.
    Denied(String),
    /// The question could not be asked (the API server did not answer): why.
    Unavailable(String),
}

impl Authorization {
    /// RBAC's two answers for a plan's owner before the attempt starts: `install` on the
    /// plan's edge and `use` of its Recipe (each `Ok(allowed)` or why it could not be
    /// asked). A definite no decides; a question that could not be answered waits.
    pub fn of_owner(
        plan: &crate::api::Plan,
        may_install: Result<bool, String>,
        may_use: Result<bool, String>,
    ) -> Self {
        match (may_install, may_use) {
            (Ok(false), _) => Authorization::Denied(format!(
                "user {:?} may no longer install onto edge {:?}; the platform team grants the `install` verb on edges/{}",
                plan.owner.username, plan.edge_name, plan.edge_name
            )),
            (_, Ok(false)) => Authorization::Denied(format!(
                "user {:?} may no longer use recipe {:?}; the platform team grants the `use` verb on recipes/{}",
                plan.owner.username, plan.provider, plan.provider
            )),
            (Err(why), _) | (_, Err(why)) => Authorization::Unavailable(why),
            (Ok(true), Ok(true)) => Authorization::Allowed,
        }
    }
}

/// The plan's values, read from the PlanValues object its digest names and checked
/// against that digest ([`crate::plan_values::decode`]). Plans that carry their values
/// inline need no read.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ValuesCheck {
    /// Not read: the decision does not need them.
    #[default]
    NotRead,
    /// The object holds exactly the sealed values.
    Verified {
        values: std::sync::Arc<serde_json::Value>,
        /// The object's UID.
        uid: String,
        /// The UIDs of its owners.
        owners: Vec<String>,
        /// Whether it has labels.
        labeled: bool,
    },
    /// No object of that name exists.
    Missing { name: String },
    /// The object's content is not the sealed values.
    Defective {
        name: String,
        defect: crate::plan_values::ValuesDefect,
    },
    /// The hub did not answer: why.
    Unavailable(String),
}

/// The signature check of the sealed plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SealCheck {
    /// There is no plan to check.
    NoPlan,
    /// The signature verifies with a published key.
    Verified,
    /// It does not verify: the reason, as a user reads it.
    Invalid(String),
    /// The published keys could not be read; the check is retried later.
    KeysUnavailable(String),
}

impl SealCheck {
    /// The check of a Workspace's plan: [`crate::verify::verify_plan`] against the
    /// Workspace it is stored in, with the published keys (or why they cannot be read).
    pub fn of(workspace: &Workspace, keyring: Result<&Keyring, &str>) -> Self {
        let Some(sealed) = workspace.spec.plan.as_ref() else {
            return SealCheck::NoPlan;
        };
        let keyring = match keyring {
            Ok(keyring) => keyring,
            Err(why) => return SealCheck::KeysUnavailable(why.to_owned()),
        };
        match verify_plan(sealed, keyring, &binding_of(workspace)) {
            Ok(()) => SealCheck::Verified,
            Err(defect) => SealCheck::Invalid(defect.to_string()),
        }
    }
}

/// The target edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EdgeState {
    /// No Edge of that name is registered.
    Missing,
    /// The installer has not probed the edge yet (it just started leading): look again soon.
    Unprobed,
    /// The Edge exists but cannot be used yet (no credential, not probed, or its
    /// credential does not work): the reason, as a user reads it.
    NotReady(String),
    /// The edge's API did not answer: the error.
    Unreachable(String),
    /// The edge answered its last probe.
    Ready(EdgeRoute),
}

/// A Ready edge's identity and endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeRoute {
    /// `spec.clusterID` of the Edge.
    pub cluster: String,
    /// `spec.workspaceUUID` of the Edge.
    pub workspace_uuid: String,
    /// The API endpoint of its kubeconfig.
    pub server: String,
}

/// The attempt's objects on the edge, each `None` when absent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EdgeObjects {
    pub namespace: Option<NamespaceState>,
    pub service_account: Option<ObjectState>,
    pub role: Option<ObjectState>,
    pub role_binding: Option<ObjectState>,
    pub values: Option<ObjectState>,
    pub job: Option<JobState>,
    /// The other Jobs labelled for this Workspace in the release namespace (its earlier
    /// attempts'), by name; read while an attempt runs, is cleaned up or the Workspace is
    /// deleted, not once it is installed.
    pub earlier_jobs: Vec<(String, ObjectState)>,
    /// The provider's runtime credential Secret in the release namespace.
    pub runtime_credential: Option<ObjectState>,
    /// The newest revision of the Helm release, from Helm's own storage.
    pub release: Option<ReleaseRevision>,
    /// What that revision installs, read when drift is to be described.
    pub release_content: Option<ReleaseContent>,
    /// The objects of the installed revision and what their metadata shows, once the
    /// release is installed and its objects are followed.
    pub objects: Option<ReleaseObjects>,
    /// The newest content check of the installed revision's objects, when this process
    /// made one.
    pub contents: Option<std::sync::Arc<crate::installer::drift::contents::ContentFindings>>,
}

/// The objects Helm recorded for an installed revision, each with what the edge's
/// metadata watches show of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReleaseObjects {
    /// The UID of the revision's record the objects were read from.
    pub record_uid: String,
    pub objects: Vec<(super::release_objects::ReleaseObject, ObjectSeen)>,
}

/// What the edge shows of one object of a release.
#[derive(Clone, Debug, PartialEq)]
pub enum ObjectSeen {
    /// Its kind's watch has not listed yet: not judged now.
    Unknown,
    /// Its kind is not followed on the edge, for that reason: not judged, and said so.
    Unfollowed(Unfollowed),
    /// Its kind's watch has listed and it is not there.
    Missing,
    Present(super::release_objects::ObjectTrace),
}

/// Why a kind of a release's objects is not followed on the edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unfollowed {
    /// The edge's RBAC refuses the installer a list of the kind there.
    ListRefused,
    /// The edge's discovery did not find a namespaced kind of that apiVersion and name.
    NotServed,
    /// The plan's execution rules do not let the runner write the kind.
    NotRunnerWritable,
    /// The release namespace follows as many kinds as it may already.
    TooManyKinds,
}

impl EdgeObjects {
    /// The runner's ServiceAccount, Role and RoleBinding and the values Secret of the
    /// attempt `names` are derived for: their kinds, what was observed of them, and names.
    pub fn runner_objects<'a>(
        &'a self,
        names: &'a AttemptNames,
    ) -> [(Kind, &'a Option<ObjectState>, &'a String); 4] {
        [
            (Kind::ServiceAccount, &self.service_account, &names.runner),
            (Kind::Role, &self.role, &names.runner),
            (Kind::RoleBinding, &self.role_binding, &names.runner),
            (Kind::Secret, &self.values, &names.values),
        ]
    }
}

/// The provider's runtime credential objects on the hub.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HubObjects {
    pub service_account: Option<ObjectState>,
    pub role_binding: Option<ObjectState>,
    /// The name of the Role the RoleBinding refers to (its `roleRef`, which cannot change).
    pub role_binding_role: Option<String>,
}
