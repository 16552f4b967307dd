//! Every reason the webhook refuses a Workspace write. The Display text is the message
//! the user sees: it names the field, the reason and what to do.

use crate::{
    plan::{ResolveError, Withdrawn},
    seal::SealError,
    verify::PlanDefect,
};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Denial {
    #[error(
        "spec.plan is written by the admission webhook only: remove spec.plan from the manifest and create the Workspace again"
    )]
    PlanSetByUser,
    #[error(
        "metadata.name: a Workspace needs a name (generateName is not supported, since the plan is sealed for the name)"
    )]
    NameRequired,
    #[error(
        "spec.plan is missing: the Workspace was not sealed by the mutating webhook; check that the providers mutating webhook is registered"
    )]
    PlanMissing,
    #[error(
        "spec.plan: {0}; remove spec.plan from your change and the webhook keeps the sealed plan"
    )]
    PlanInvalid(PlanDefect),
    #[error(
        "spec.retry: attempt {attempt}'s stored plan cannot be run again: {defect}. A retry never signs a plan this webhook did not seal for this Workspace; change spec.recipe, spec.edge, spec.version or spec.values to seal a new attempt from the current Recipe"
    )]
    RetryOfUnverifiedPlan { attempt: i64, defect: PlanDefect },
    #[error(
        "spec.retry: the stored spec.plan (attempt {attempt}, ID {stored_id}) is not the attempt the installer recorded (ID {recorded_id}), so it cannot be run again; change spec.recipe, spec.edge, spec.version or spec.values to seal a new attempt"
    )]
    RetryOfUnrecordedPlan {
        attempt: i64,
        stored_id: String,
        recorded_id: String,
    },
    #[error(
        "spec.retry: attempt {attempt} cannot run again: {why}; change the intent (for example spec.version), which seals a new attempt from the current Recipe"
    )]
    RetryWithdrawn { attempt: i64, why: Withdrawn },
    #[error(
        "metadata.annotations[providers.platform.dev/rollback-to]: attempt {attempt} has no kept plan to roll back to (kept: {kept:?}); a plan is kept for the newest succeeded attempts only: `kubectl provider history` lists them"
    )]
    RollbackNotKept { attempt: i64, kept: Vec<i64> },
    #[error(
        "metadata.annotations[providers.platform.dev/rollback-to]: {value} is not an attempt number; set it to the number of a succeeded attempt (`kubectl provider history`)"
    )]
    RollbackTargetInvalid { value: String },
    #[error(
        "metadata.annotations[providers.platform.dev/rollback-to]: attempt {attempt} is still active, so nothing can be rolled back now; wait for its result (kubectl provider status)"
    )]
    RollbackWhileActive { attempt: i64 },
    #[error(
        "spec.retry: a rollback to attempt {attempt} is asked for by raising spec.retry in the same write as the rollback-to annotation (`kubectl provider rollback` does both); otherwise remove the annotation"
    )]
    RollbackNeedsRetry { attempt: i64 },
    #[error(
        "spec.{field}: a rollback restores the intent of the attempt it rolls back to, so it cannot change spec.{field} in the same write; roll back first, then change it"
    )]
    RollbackWithIntentChange { field: &'static str },
    #[error(
        "spec.{field}: attempt {attempt} ran with spec.{field} {was}, and the Workspace names another now; a rollback does not move a Workspace: set spec.{field} back first, or choose a later attempt (`kubectl provider history`)"
    )]
    RollbackAcrossTargets {
        attempt: i64,
        field: &'static str,
        was: String,
    },
    #[error(
        "metadata.annotations[providers.platform.dev/rollback-to]: attempt {attempt} is the current attempt, nothing to roll back; to install its plan again after drift, use `kubectl provider repair`"
    )]
    RollbackToCurrent { attempt: i64 },
    #[error(
        "spec.retry: the plan of attempt {attempt} cannot be rolled back to: {why}; choose another attempt (`kubectl provider history`), or change the intent, which seals a new attempt from the current Recipe"
    )]
    RollbackWithdrawn { attempt: i64, why: Withdrawn },
    #[error(
        "spec.plan: attempt {attempt} was sealed for another request (a dry run or an earlier write), so it cannot start here; remove spec.plan from your change"
    )]
    PlanReplayed { attempt: i64 },
    #[error(
        "spec.plan differs from the sealed plan of attempt {attempt}: the plan cannot be edited; remove spec.plan from your change"
    )]
    PlanChanged { attempt: i64 },
    #[error(
        "spec.plan: attempt {found} cannot follow attempt {current}; only the webhook starts attempts: remove spec.plan from your change"
    )]
    AttemptOutOfOrder { current: i64, found: i64 },
    #[error(
        "spec.{field} cannot change while attempt {attempt} ({attempt_id}) is active: wait for its result (kubectl provider status), or delete the Workspace"
    )]
    EditForbidden {
        field: &'static str,
        attempt: i64,
        attempt_id: String,
    },
    #[error(
        "spec.plan: attempt {attempt} is still active, so no new attempt can start; wait for its result (kubectl provider status)"
    )]
    AttemptActive { attempt: i64 },
    #[error(
        "spec.{field} changed but no new attempt was sealed for it; apply the change again through the API server with the providers webhooks registered"
    )]
    NotResealed { field: &'static str },
    #[error(
        "metadata.deletionTimestamp: Workspace {workspace} is being deleted, so no new attempt can start; wait until it is gone, then create it again"
    )]
    DeletionFenced { workspace: String },
    #[error(
        "{field}: {name} is not a valid name (lowercase letters, digits, '-' and '.', at most 253 characters); `kubectl provider recipes` and `kubectl provider edges` list what exists"
    )]
    InvalidName { field: &'static str, name: String },
    #[error(
        "spec.recipe: recipe {name} does not exist; `kubectl provider recipes` lists the recipes you can install"
    )]
    UnknownRecipe { name: String },
    #[error(
        "spec.edge: edge {name} does not exist; `kubectl provider edges` lists the edges and whether you may install there"
    )]
    UnknownEdge { name: String },
    #[error(
        "spec.edge: user {user} may not install onto edge {edge:?}; ask the platform team for the `install` verb on edges/{edge}"
    )]
    EdgeNotAuthorized { user: String, edge: String },
    #[error(
        "request.userInfo: {bytes} bytes of the requester's {what} as stored; a sealed plan records them, and at most {max} are sealed; make the write as an identity with a shorter name and fewer groups"
    )]
    RequesterTooLarge {
        what: &'static str,
        bytes: usize,
        max: usize,
    },
    #[error("spec.edge: could not check whether {user} may install onto edge {edge:?}: {reason}")]
    AuthorizationUnavailable {
        user: String,
        edge: String,
        reason: String,
    },
    #[error(
        "spec.recipe: user {user} may not use recipe {recipe:?}; ask the platform team for the `use` verb on recipes/{recipe} in the providers.platform.dev API group"
    )]
    RecipeNotEntitled { user: String, recipe: String },
    #[error("spec.recipe: could not check whether {user} may use recipe {recipe:?}: {reason}")]
    RecipeAuthorizationUnavailable {
        user: String,
        recipe: String,
        reason: String,
    },
    #[error("{field}: could not read {what}: {reason}; try again")]
    LookupFailed {
        field: &'static str,
        what: String,
        reason: String,
    },
    #[error("{0}")]
    Resolve(ResolveError),
    #[error(
        "the webhook could not seal the plan: {0}; this is a platform fault, tell the platform team"
    )]
    SealFailed(SealError),
    #[error(
        "spec.retry: attempt {attempt} would run values ({digest}) that are no longer stored on the hub (PlanValues {name}), so that plan cannot run again; change spec.values or spec.version to seal a new attempt from the intent"
    )]
    PlanValuesMissing {
        attempt: i64,
        name: String,
        digest: String,
    },
    #[error(
        "spec.plan: the webhook could not store the plan's values (PlanValues {name}): {reason}; nothing was sealed, try again"
    )]
    PlanValuesNotStored { name: String, reason: String },
    #[error(
        "spec.plan: PlanValues {name} already exists and {defect}; nothing was sealed. Only the webhook writes PlanValues: the platform team finds who changed it (the audit log) and deletes it, then this write can be made again"
    )]
    PlanValuesConflict { name: String, defect: String },
    #[error(
        "spec.plan: {pending} PlanValues in namespace {namespace} are waiting for their Workspaces (the most is {max}): values stored for writes the API server then refused are removed by the installer's sweep, and those of new Workspaces once the installer has seen them; nothing was sealed, try again in a few minutes"
    )]
    TooManyPendingValues {
        namespace: String,
        pending: usize,
        max: usize,
    },
    #[error(
        "metadata.annotations[providers.platform.dev/automatic-repair]: {value} is not an attempt number; only the providers installer sets this annotation: remove it (to repair drift yourself: kubectl provider repair)"
    )]
    AutomaticRepairInvalid { value: String },
    #[error(
        "metadata.annotations[providers.platform.dev/automatic-repair]: attempt {attempt} cannot be repaired automatically: {why}; remove the annotation (to repair drift yourself: kubectl provider repair)"
    )]
    AutomaticRepairRefused { attempt: i64, why: String },
    #[error(
        "metadata.annotations[providers.platform.dev/automatic-repair]: only the providers installer asks for an automatic repair (the `autorepair` verb on workspaces), and {user} may not; remove the annotation (to repair drift yourself: kubectl provider repair)"
    )]
    AutomaticRepairNotInstaller { user: String },
    #[error(
        "metadata.annotations[providers.platform.dev/automatic-repair]: could not ask RBAC whether {user} may ask for an automatic repair: {reason}; nothing was sealed: the installer asks again later, or repair by hand: kubectl provider repair"
    )]
    AutomaticRepairUnverified { user: String, reason: String },
}

impl Denial {
    /// A machine-readable reason, for `status.reason` and the denials metric.
    pub fn reason(&self) -> &'static str {
        match self {
            Denial::PlanSetByUser => "PlanSetByUser",
            Denial::NameRequired => "NameRequired",
            Denial::PlanMissing => "PlanMissing",
            Denial::PlanInvalid(PlanDefect::Seal(_)) => "SealInvalid",
            Denial::PlanInvalid(PlanDefect::DryRun { .. }) => "PlanSealedForDryRun",
            Denial::PlanInvalid(
                PlanDefect::OtherWorkspace { .. }
                | PlanDefect::OtherOrganization { .. }
                | PlanDefect::OtherUid { .. },
            ) => "PlanForOtherWorkspace",
            Denial::PlanInvalid(_) => "PlanNotBound",
            Denial::RetryOfUnverifiedPlan { .. } => "RetryOfUnverifiedPlan",
            Denial::RetryOfUnrecordedPlan { .. } => "RetryOfUnrecordedPlan",
            Denial::RetryWithdrawn { .. } => "RetryWithdrawn",
            Denial::RollbackNotKept { .. } => "RollbackNotKept",
            Denial::RollbackTargetInvalid { .. } => "RollbackTargetInvalid",
            Denial::RollbackWhileActive { .. } => "RollbackWhileActive",
            Denial::RollbackNeedsRetry { .. } => "RollbackNeedsRetry",
            Denial::RollbackWithIntentChange { .. } => "RollbackWithIntentChange",
            Denial::RollbackWithdrawn { .. } => "RollbackWithdrawn",
            Denial::RollbackAcrossTargets { .. } => "RollbackAcrossTargets",
            Denial::RollbackToCurrent { .. } => "RollbackToCurrent",
            Denial::PlanReplayed { .. } => "PlanReplayed",
            Denial::PlanChanged { .. } => "PlanChanged",
            Denial::AttemptOutOfOrder { .. } => "AttemptOutOfOrder",
            Denial::EditForbidden { .. } => "EditForbidden",
            Denial::AttemptActive { .. } => "AttemptActive",
            Denial::NotResealed { .. } => "NotResealed",
            Denial::DeletionFenced { .. } => "DeletionFenced",
            Denial::InvalidName { .. } => "InvalidName",
            Denial::UnknownRecipe { .. } => "UnknownRecipe",
            Denial::UnknownEdge { .. } => "UnknownEdge",
            Denial::RequesterTooLarge { .. } => "RequesterTooLarge",
            Denial::EdgeNotAuthorized { .. } => "EdgeNotAuthorized",
            Denial::AuthorizationUnavailable { .. } => "AuthorizationUnavailable",
            Denial::RecipeNotEntitled { .. } => "RecipeNotEntitled",
            Denial::RecipeAuthorizationUnavailable { .. } => "RecipeAuthorizationUnavailable",
            Denial::LookupFailed { .. } => "LookupFailed",
            Denial::Resolve(ResolveError::Values(_)) => "ValueNotAllowed",
            Denial::Resolve(
                ResolveError::VersionNotAllowed { .. } | ResolveError::VersionTooLong { .. },
            ) => "VersionNotAllowed",
            Denial::Resolve(_) => "RecipeInvalid",
            Denial::SealFailed(_) => "SealFailed",
            Denial::PlanValuesMissing { .. } => "PlanValuesMissing",
            Denial::PlanValuesNotStored { .. } => "PlanValuesNotStored",
            Denial::PlanValuesConflict { .. } => "PlanValuesConflict",
            Denial::TooManyPendingValues { .. } => "TooManyPendingValues",
            Denial::AutomaticRepairInvalid { .. } => "AutomaticRepairInvalid",
            Denial::AutomaticRepairRefused { .. } => "AutomaticRepairRefused",
            Denial::AutomaticRepairNotInstaller { .. } => "AutomaticRepairNotInstaller",
            Denial::AutomaticRepairUnverified { .. } => "AutomaticRepairUnverified",
        }
    }

    /// The field the denial is about.
    pub fn field(&self) -> String {
        match self {
            Denial::EditForbidden { field, .. } | Denial::NotResealed { field } => {
                format!("spec.{field}")
            }
            Denial::RetryOfUnverifiedPlan { .. }
            | Denial::RetryOfUnrecordedPlan { .. }
            | Denial::RetryWithdrawn { .. }
            | Denial::RollbackNeedsRetry { .. }
            | Denial::RollbackWithdrawn { .. } => "spec.retry".to_owned(),
            Denial::RollbackNotKept { .. }
            | Denial::RollbackTargetInvalid { .. }
            | Denial::RollbackWhileActive { .. }
            | Denial::RollbackToCurrent { .. } => {
                format!(
                    "metadata.annotations[{}]",
                    crate::installer::names::ANNOTATION_ROLLBACK_TO
                )
            }
            Denial::AutomaticRepairInvalid { .. }
            | Denial::AutomaticRepairRefused { .. }
            | Denial::AutomaticRepairNotInstaller { .. }
            | Denial::AutomaticRepairUnverified { .. } => format!(
                "metadata.annotations[{}]",
                crate::installer::names::ANNOTATION_AUTOMATIC_REPAIR
            ),
            Denial::RollbackWithIntentChange { field }
            | Denial::RollbackAcrossTargets { field, .. } => {
                format!("spec.{field}")
            }
            Denial::UnknownRecipe { .. }
            | Denial::RecipeNotEntitled { .. }
            | Denial::RecipeAuthorizationUnavailable { .. } => "spec.recipe".to_owned(),
            Denial::UnknownEdge { .. }
            | Denial::EdgeNotAuthorized { .. }
            | Denial::AuthorizationUnavailable { .. } => "spec.edge".to_owned(),
            Denial::Resolve(error) => error.field(),
            Denial::LookupFailed { field, .. } | Denial::InvalidName { field, .. } => {
                (*field).to_owned()
            }
            Denial::DeletionFenced { .. } => "metadata.deletionTimestamp".to_owned(),
            Denial::NameRequired => "metadata.name".to_owned(),
            Denial::RequesterTooLarge { .. } => "request.userInfo".to_owned(),
            Denial::PlanValuesMissing { .. } => "spec.retry".to_owned(),
            _ => "spec.plan".to_owned(),
        }
    }

    /// The HTTP status code in the AdmissionResponse's status.
    pub fn code(&self) -> u16 {
        match self {
            Denial::EdgeNotAuthorized { .. }
            | Denial::RecipeNotEntitled { .. }
            | Denial::AutomaticRepairNotInstaller { .. } => 403,
            Denial::AuthorizationUnavailable { .. }
            | Denial::RecipeAuthorizationUnavailable { .. }
            | Denial::LookupFailed { .. }
            | Denial::PlanValuesNotStored { .. }
            | Denial::AutomaticRepairUnverified { .. }
            | Denial::SealFailed(_) => 503,
            // Not 429: clients retry that on their own for minutes, the user waiting blind.
            Denial::TooManyPendingValues { .. } => 409,
            Denial::PlanValuesConflict { .. } => 409,
            Denial::DeletionFenced { .. }
            | Denial::AttemptActive { .. }
            | Denial::RollbackWhileActive { .. } => 409,
            _ => 422,
        }
    }
}
