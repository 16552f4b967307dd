//! The installer's state machine, as pure functions.
//!
//! The controller reads a Workspace (fresh from the hub), the seal check, the target
//! edge's readiness and the attempt's objects on the edge; [`decide`] returns the
//! actions to take, in order, and when to look again. The rules, in the order they apply:
//!
//! - PrepareDelete (`delete`): a deleted Workspace is fenced, the current attempt's
//!   runner identity revoked, its Job removed, its namespace released; then the
//!   Workspace's finalizer goes. Every write is guarded by the Workspace's UID.
//! - An older recorded attempt finishes first (`attempt`): its Job runs to its end and
//!   is cleaned up before a newer sealed attempt starts; an older one without a Job is
//!   superseded. A plan no newer than the recorded attempt is a replay and never runs.
//! - Start (`attempt`): a new sealed attempt is verified (signature, Workspace identity
//!   and UID) and bound to the Workspace in status before anything else happens; an
//!   invalid one is recorded as Rejected and touches nothing on the edge.
//! - Edge readiness (`decision_draft`): nothing is read or written on an edge that is not Ready.
//! - Preparation (`prepare`): a preparation record is written first; namespace admission
//!   (`namespace_admission`); the provider's runtime credential (`runtime_credential`); a
//!   pending Helm release is recovered; the runner's ServiceAccount, Role, RoleBinding and
//!   values Secret; then the Job.
//! - Status (`job`): the Job's UID, then its terminal result, are recorded.
//! - ReconcileCleanup and Cleanup (`cleanup`): after the result is recorded, the identity
//!   is revoked, then the Job's finalizer released, then `cleanedUp` set.
//! - The orphan sweep (`sweep`): edge objects of Workspaces gone from the hub without
//!   their cleanup are removed as PrepareDelete would have.

mod action;
mod attempt;
pub mod attempt_reads;
mod cleanup;
pub mod conditions;
mod decide;
mod decision_draft;
pub mod delete;
pub mod drift;
pub mod edge_owners;
mod job;
mod left_on_edge;
mod lost_namesake;
pub mod manifests;
pub mod names;
mod namespace_admission;
mod observation;
pub mod patch;
mod prepare;
pub mod release_objects;
mod runtime_credential;
mod settings;
pub mod sweep;

#[cfg(test)]
mod tests;

pub use action::{
    Action, Decision, Deletion, EdgeObject, Kind, MintCredential, NamespaceChange, Next, Note,
    OwnValues, RepairRequest, RunnerLog,
};
pub use attempt_reads::{AttemptReads, attempt_reads};
pub use decide::decide;
pub use observation::{
    Authorization, EdgeObjects, EdgeRoute, EdgeState, HubObjects, JobOutcome, JobState,
    NamespaceState, ObjectSeen, ObjectState, Observation, ReleaseObjects, ReleaseRevision,
    RunnerPod, SealCheck, Unfollowed, ValuesCheck, job_state, newest_revision, runner_pod,
    state_of,
};
pub use settings::{DEFAULT_HELM_IMAGE, KEPT_PLANS_BYTES, Settings};
