//! Workspaces as the webhook seals and the API server stores them, and the same with one
//! thing wrong: the inputs that reach the admission and installer paths past the seal
//! check, which arbitrary JSON almost never does.
//!
//! A [`Scenario`] is built the way a write happens: a create is sealed by the mutating
//! decision (`plan_action`, then `seal_attempt` with this file's key), the API server
//! assigns a UID and a creation time, and the result is stored with an installer status;
//! an update edits that stored object and goes through the mutating decision again. Then
//! a [`Tamper`] may change the plan the validating webhook (and the installer) will see:
//! after sealing (the signature no longer covers it), signed by another key, or signed
//! again by this very key with one field wrong (the signature verifies, the binding and
//! order checks must catch it).

use base64::{Engine, engine::general_purpose::STANDARD};
use k8s_openapi::{
    api::authentication::v1::UserInfo,
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::{SignedDuration, Timestamp},
};
use proptest::prelude::*;
use providers_shared::{
    admission::{
        Denial, Operation, Request,
        mutate::{Lookups, PlanAction, Sealing, StartKind, plan_action, seal_attempt},
    },
    api::{
        ChartRef, Drift, EdgeSpec, JobResult, RecipeSpec, SealedPlan, SecretKeyRef, ValueField,
        ValueType, Workspace, WorkspaceSpec, WorkspaceStatus,
    },
    seal::{Keyring, Sealer},
};
use serde_json::json;

/// When every request of a scenario is reviewed, and the installer decides.
pub fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("a valid time")
}

/// The webhook's key.
pub fn sealer() -> Sealer {
    Sealer::from_seed([7; 32])
}

/// A key nobody published.
pub fn other_sealer() -> Sealer {
    Sealer::from_seed([9; 32])
}

pub const REPOSITORY: &str = "https://charts.example";

fn recipe_spec() -> RecipeSpec {
    RecipeSpec {
        drift: None,
        chart: ChartRef {
            repository: REPOSITORY.into(),
            name: "demo".into(),
        },
        versions: vec!["1.2.0".into(), "1.1.0".into()],
        namespace: Some("demo".into()),
        release: Some("demo".into()),
        values: Some(json!({"replicaCount": 1})),
        values_schema: vec![ValueField {
            path: "replicaCount".into(),
            type_: ValueType::Integer,
            description: None,
            enum_: None,
            pattern: None,
            max_length: None,
            minimum: Some(1.0),
            maximum: Some(5.0),
        }],
        execution: vec![],
        runtime_credential: None,
    }
}

fn edge_spec(name: &str) -> EdgeSpec {
    EdgeSpec {
        cluster_id: format!("{name}-cluster"),
        workspace_uuid: "8c6b7c1e-0000-4000-8000-000000000001".into(),
        kubeconfig_secret_ref: SecretKeyRef {
            namespace: "providers-system".into(),
            name: name.into(),
            key: "kubeconfig".into(),
        },
    }
}

pub fn alice() -> UserInfo {
    UserInfo {
        username: Some("alice".into()),
        uid: Some("uid-alice".into()),
        groups: Some(vec!["tenants".into(), "system:authenticated".into()]),
        ..Default::default()
    }
}

/// The installer's status of a stored Workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Nothing recorded yet.
    None,
    /// The sealed attempt is recorded and has no result.
    Active,
    Succeeded,
    Failed,
    /// Installed, then drifted: a raised retry repairs.
    Drifted,
    /// Failed, and deletion has begun.
    Deleting,
    /// The installer recorded a later attempt than the stored plan.
    Superseded,
}

/// What an update changes of the stored Workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Only a label.
    Label,
    RaiseRetry,
    Version,
    Values(i64),
    Edge,
    /// Leaves spec.plan out (a GitOps apply): the mutating webhook restores it.
    OmitPlan,
}

/// A field of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Version,
    ValuesDigest,
    AttemptId,
    Attempt,
    WorkspaceName,
    WorkspaceUid,
    Org,
    Edge,
    Job,
    DryRun,
    /// An hour earlier: a UID-less first attempt then belongs to another creation.
    SealedAt,
    Namespace,
    Owner,
    Repository,
}

/// What is wrong with the plan the validating webhook and the installer see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tamper {
    /// One bit of the signature flipped.
    FlipSignature(u8),
    /// The signature cut short: not 64 bytes.
    TruncateSignature,
    /// Sealed by a key that is not published.
    OtherKey,
    /// Signed by another key under the published key's ID.
    OtherKeyNamedOurs,
    Algorithm,
    /// A field changed after sealing.
    Changed(Field),
    /// A field changed and sealed again by the published key.
    Resealed(Field),
}

impl Tamper {
    /// Whether the signature no longer verifies with the published keys.
    pub fn breaks_seal(self) -> bool {
        !matches!(self, Tamper::Resealed(_))
    }
}

/// Which plan a tamper changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The plan of the write under review.
    Request,
    /// The plan stored before the write (what a retry runs again).
    Stored,
}

/// What a scenario is built from: proptest generates and shrinks these.
#[derive(Clone, Debug)]
pub struct Shape {
    /// `None`: a create; else an update of a stored Workspace in this status.
    pub stored: Option<(Status, Edit)>,
    pub replicas: i64,
    pub tamper: Option<(Tamper, Target)>,
    pub dry_run: bool,
}

pub fn shapes() -> impl Strategy<Value = Shape> {
    let status = prop_oneof![
        1 => Just(Status::None),
        2 => Just(Status::Active),
        2 => Just(Status::Succeeded),
        3 => Just(Status::Failed),
        2 => Just(Status::Drifted),
        1 => Just(Status::Deleting),
        1 => Just(Status::Superseded),
    ];
    let edit = prop_oneof![
        2 => Just(Edit::Label),
        3 => Just(Edit::RaiseRetry),
        2 => Just(Edit::Version),
        2 => (1i64..=7).prop_map(Edit::Values),
        1 => Just(Edit::Edge),
        1 => Just(Edit::OmitPlan),
    ];
    let field = prop_oneof![
        Just(Field::Version),
        Just(Field::ValuesDigest),
        Just(Field::AttemptId),
        Just(Field::Attempt),
        Just(Field::WorkspaceName),
        Just(Field::WorkspaceUid),
        Just(Field::Org),
        Just(Field::Edge),
        Just(Field::Job),
        Just(Field::DryRun),
        Just(Field::SealedAt),
        Just(Field::Namespace),
        Just(Field::Owner),
        Just(Field::Repository),
    ];
    // A field resealed is weighted up: only it gets past the signature to the binding.
    let tamper = prop_oneof![
        1 => any::<u8>().prop_map(Tamper::FlipSignature),
        1 => Just(Tamper::TruncateSignature),
        1 => Just(Tamper::OtherKey),
        1 => Just(Tamper::OtherKeyNamedOurs),
        1 => Just(Tamper::Algorithm),
        3 => field.clone().prop_map(Tamper::Changed),
        5 => field.prop_map(Tamper::Resealed),
    ];
    let target = prop_oneof![3 => Just(Target::Request), 1 => Just(Target::Stored)];
    (
        // Creates, and updates of a stored Workspace.
        prop::option::weighted(0.6, (status, edit)),
        1i64..=6,
        // Half valid, half near-valid.
        prop::option::of((tamper, target)),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(stored, replicas, tamper, dry_run)| Shape {
            stored,
            replicas,
            tamper,
            dry_run,
        })
}

/// One write under review, as both webhooks see it, and the object the installer reads.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub operation: Operation,
    /// The object the validating webhook reviews: as the mutating webhook left it (or as
    /// the request had it, when the mutating webhook refused it).
    pub object: Workspace,
    pub old: Option<Workspace>,
    pub dry_run: bool,
    /// What the mutating webhook decided: `Ok` with what it did (`keep`, `restore`, or
    /// `start <why>`), or its denial.
    pub mutated: Result<&'static str, Denial>,
    /// The tamper actually applied (none when there was no plan to change).
    pub tampered: Option<(Tamper, Target)>,
}

/// Builds the scenario `shape` describes.
pub fn scenario(shape: &Shape) -> Scenario {
    let user = alice();
    let fresh = Workspace {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("ws".into()),
            namespace: Some("org-a".into()),
            ..Default::default()
        },
        spec: WorkspaceSpec {
            recipe: "demo".into(),
            edge: "edge-1".into(),
            version: None,
            values: Some(json!({"replicaCount": shape.replicas})),
            retry: None,
            plan: None,
        },
        status: None,
    };
    let mut tampered = None;
    let (operation, request, old) = match shape.stored {
        None => (Operation::Create, fresh, None),
        Some((status, edit)) => {
            // Stored as admitted at creation; a create the webhook refused is stored
            // unsealed, as it would be with the webhooks bypassed.
            let (sealed, admitted) = mutated(Operation::Create, &fresh, None, &user, false);
            let mut stored = if sealed.is_ok() { admitted } else { fresh };
            stored.metadata.uid = Some("uid-ws-1".into());
            stored.metadata.resource_version = Some("7".into());
            stored.status = status_of(&stored, status);
            if let Some((tamper, Target::Stored)) = shape.tamper
                && let Some(plan) = stored.spec.plan.as_mut()
            {
                apply(tamper, plan);
                tampered = Some((tamper, Target::Stored));
            }
            let mut request = stored.clone();
            edit_of(&mut request, edit);
            (Operation::Update, request, Some(stored))
        }
    };
    let (mutated, mut object) = mutated(operation, &request, old.as_ref(), &user, shape.dry_run);
    if let Some((tamper, Target::Request)) = shape.tamper
        && let Some(plan) = object.spec.plan.as_mut()
    {
        apply(tamper, plan);
        tampered = Some((tamper, Target::Request));
    }
    Scenario {
        operation,
        object,
        old,
        dry_run: shape.dry_run,
        mutated,
        tampered,
    }
}

/// The mutating webhook's decision, run end to end with the Recipe and the Edge found
/// and the user allowed, and the object the validating webhook then sees (for a create,
/// with the UID and creation time the API server assigns in between).
pub fn mutated(
    operation: Operation,
    object: &Workspace,
    old: Option<&Workspace>,
    user: &UserInfo,
    dry_run: bool,
) -> (Result<&'static str, Denial>, Workspace) {
    let request = Request {
        operation,
        user,
        object,
        old,
        dry_run,
        now: now(),
    };
    let mut result = object.clone();
    let action = match plan_action(&request) {
        Ok(PlanAction::Keep) => Ok("keep"),
        Ok(PlanAction::Restore(plan)) => {
            result.spec.plan = Some(*plan);
            Ok("restore")
        }
        Ok(PlanAction::Start(start)) => {
            let started = match start.kind {
                StartKind::Create => "start create",
                StartKind::Upgrade => "start upgrade",
                StartKind::Retry { .. } => "start retry",
                StartKind::Rollback { .. } => "start rollback",
            };
            let recipe = recipe_spec();
            let edge = edge_spec(&start.edge);
            let sealer = sealer();
            let keyring = Keyring::from(&sealer);
            let allowlist = vec![REPOSITORY.to_owned()];
            let lookups = Lookups {
                recipe: (start.recipe == "demo").then_some(&recipe),
                edge: Some(&edge),
                may_install: Ok(true),
                may_use: Ok(true),
                automatic_repairer: Ok(false),
            };
            let sealing = Sealing {
                sealer: &sealer,
                keyring: &keyring,
                allowlist: &allowlist,
            };
            seal_attempt(&request, &start, lookups, &sealing).map(|attempt| {
                result.spec.plan = Some(attempt.sealed);
                started
            })
        }
        Err(denial) => Err(denial),
    };
    if operation == Operation::Create {
        result.metadata.uid = Some("uid-ws-1".into());
        result.metadata.creation_timestamp = Some(Time(now()));
    }
    (action, result)
}

fn status_of(stored: &Workspace, status: Status) -> Option<WorkspaceStatus> {
    let plan = &stored.spec.plan.as_ref()?.plan;
    let recorded = WorkspaceStatus {
        attempt: Some(plan.attempt),
        attempt_id: Some(plan.attempt_id.clone()),
        workspace_uid: stored.metadata.uid.clone(),
        job: Some(plan.job.clone()),
        ..Default::default()
    };
    let with = |result| WorkspaceStatus {
        job_result: Some(result),
        finished_at: Some(Time(now())),
        ..recorded.clone()
    };
    match status {
        Status::None => None,
        Status::Active => Some(recorded),
        Status::Succeeded => Some(with(JobResult::Succeeded)),
        Status::Failed => Some(with(JobResult::Failed)),
        Status::Drifted => Some(WorkspaceStatus {
            drift: Some(Drift {
                reason: "Modified".into(),
                message: "upgraded by hand".into(),
                revision: Some(2),
                record_uid: None,
                detected_at: Time(now()),
                objects: Vec::new(),
                automatic_repair: None,
            }),
            ..with(JobResult::Succeeded)
        }),
        Status::Deleting => Some(WorkspaceStatus {
            deleting: true,
            ..with(JobResult::Failed)
        }),
        Status::Superseded => Some(WorkspaceStatus {
            attempt: Some(plan.attempt + 1),
            attempt_id: Some(format!("{}-next", plan.attempt_id)),
            ..recorded.clone()
        }),
    }
}

fn edit_of(request: &mut Workspace, edit: Edit) {
    let spec = &mut request.spec;
    match edit {
        Edit::Label => {
            request.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
        }
        Edit::RaiseRetry => spec.retry = Some(spec.retry.unwrap_or(0) + 1),
        Edit::Version => spec.version = Some("1.1.0".into()),
        Edit::Values(replicas) => spec.values = Some(json!({"replicaCount": replicas})),
        Edit::Edge => spec.edge = "edge-2".into(),
        Edit::OmitPlan => spec.plan = None,
    }
}

/// Applies `tamper` to `sealed`.
pub fn apply(tamper: Tamper, sealed: &mut SealedPlan) {
    match tamper {
        Tamper::FlipSignature(bit) => {
            let mut bytes = STANDARD.decode(&sealed.seal.signature).unwrap_or_default();
            if bytes.is_empty() {
                bytes.push(0);
            }
            let at = usize::from(bit / 8) % bytes.len();
            bytes[at] ^= 1 << (bit % 8);
            sealed.seal.signature = STANDARD.encode(bytes);
        }
        Tamper::TruncateSignature => {
            let bytes = STANDARD.decode(&sealed.seal.signature).unwrap_or_default();
            sealed.seal.signature = STANDARD.encode(&bytes[..bytes.len().min(63)]);
        }
        Tamper::OtherKey => *sealed = reseal(&other_sealer(), sealed),
        Tamper::OtherKeyNamedOurs => {
            let key_id = sealed.seal.key_id.clone();
            *sealed = reseal(&other_sealer(), sealed);
            sealed.seal.key_id = key_id;
        }
        Tamper::Algorithm => sealed.seal.algorithm = "ed25519".into(),
        Tamper::Changed(field) => change(field, sealed),
        Tamper::Resealed(field) => {
            change(field, sealed);
            *sealed = reseal(&sealer(), sealed);
        }
    }
}

fn reseal(sealer: &Sealer, sealed: &SealedPlan) -> SealedPlan {
    sealer
        .seal(sealed.plan.clone())
        .expect("a plan that was sealed once seals again")
}

/// `wanted`, unless the field holds it already: then `instead`, so that a tamper always
/// changes the plan (a scenario may have put the Workspace on `edge-2` itself).
fn other_than(current: &str, wanted: &str, instead: &str) -> String {
    if current == wanted { instead } else { wanted }.to_owned()
}

fn change(field: Field, sealed: &mut SealedPlan) {
    let plan = &mut sealed.plan;
    match field {
        Field::Version => plan.version = other_than(&plan.version, "9.9.9", "9.9.8"),
        Field::ValuesDigest => {
            plan.values_digest = Some(match &plan.values_digest {
                Some(digest) => digest.chars().rev().collect(),
                None => "0".repeat(64),
            });
        }
        Field::AttemptId => plan.attempt_id.push('x'),
        Field::Attempt => plan.attempt += 1,
        Field::WorkspaceName => {
            plan.workspace.name = other_than(&plan.workspace.name, "other", "another");
        }
        Field::WorkspaceUid => {
            plan.workspace.uid = other_than(&plan.workspace.uid, "uid-ws-0", "uid-ws-00");
        }
        Field::Org => plan.org = other_than(&plan.org, "org-b", "org-c"),
        Field::Edge => plan.edge_name = other_than(&plan.edge_name, "edge-2", "edge-3"),
        Field::Job => plan.job.push_str("-x"),
        Field::DryRun => plan.dry_run = !plan.dry_run,
        Field::SealedAt => {
            let at = plan.sealed_at.as_ref().map_or_else(now, |t| t.0);
            plan.sealed_at = Some(Time(
                at.checked_sub(SignedDuration::from_hours(1))
                    .expect("an hour earlier is a time"),
            ));
        }
        Field::Namespace => {
            plan.namespace = other_than(&plan.namespace, "kube-system", "kube-public");
        }
        Field::Owner => {
            plan.owner.username = other_than(&plan.owner.username, "mallory", "trudy");
        }
        Field::Repository => {
            plan.chart.repository = other_than(
                &plan.chart.repository,
                "https://evil.example",
                "https://evil.test",
            );
        }
    }
}
