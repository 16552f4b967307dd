//! The `providers.platform.dev/v1alpha1` API: Recipe, Edge and Workspace.

// `printcolumn(name = .., type_ = "string", ..)` repeats keys across columns by design.
mod drift_policy;
#[allow(clippy::duplicated_attributes)]
mod edge;
pub mod json_number;
mod map_adapter;
mod plan;
#[allow(clippy::duplicated_attributes)]
mod plan_values;
#[allow(clippy::duplicated_attributes)]
mod recipe;
mod sealed_plan_decoding;
#[allow(clippy::duplicated_attributes)]
mod workspace;
mod workspace_drift;

pub use crate::execution::ExecutionRule;
pub use drift_policy::{DEFAULT_REPAIR_QUIET_PERIOD_SECONDS, DriftPolicy, IgnoredFields, Repair};
pub use edge::{Edge, EdgeSpec, EdgeStatus, SecretKeyRef};
pub use map_adapter::{AdaptedObject, EntriesAdapter, MapKey};
pub use plan::{Cause, Owner, Plan, Seal, SealedPlan, WorkspaceIdentity};
pub use plan_values::{PlanValues, PlanValuesSpec};
pub use recipe::{ChartRef, Recipe, RecipeSpec, RuntimeCredential, ValueField, ValueType};
pub use workspace::{
    AttemptRecord, JobResult, KeptPlan, MAX_RETRY, Phase, Preparation, Target, Workspace,
    WorkspaceSpec, WorkspaceStatus,
};
pub use workspace_drift::{
    AutomaticRepair, AutomaticRepairState, ContentBaseline, Drift, DriftedObject, InstalledRelease,
    UnfollowedKind,
};

/// The API group of every kind this project defines.
pub const GROUP: &str = "providers.platform.dev";
/// The served and stored version.
pub const VERSION: &str = "v1alpha1";
