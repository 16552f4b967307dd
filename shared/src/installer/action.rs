//! What the installer does: the outputs of [`super::decide`].

use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{Namespace, Secret, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};

use crate::api::WorkspaceStatus;

/// One decision: actions to run in order, then when to look again.
///
/// The shell runs the actions one by one and stops at the first that fails; the next
/// decision is taken from a fresh observation, so every action is safe to repeat and a
/// crash between any two loses nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub actions: Vec<Action>,
    pub next: Next,
}

impl Decision {
    /// Whether any of the actions revokes or deletes.
    pub fn revokes_or_deletes(&self) -> bool {
        self.actions.iter().any(Action::revokes_or_deletes)
    }

    /// Rule `revocation_is_decided_from_a_live_read`, the cheap way: when a write of the
    /// Workspace comes before the first action that revokes or deletes, the decision
    /// stops there. The API server answers that write with the Workspace as stored, which
    /// is a live read, and what revokes is decided again from it (the write's own `test`
    /// of the UID fails on a replacement). Returns the decision so cut, to be taken again
    /// once it ran; `None` when no write of the Workspace comes first, and then the shell
    /// reads the Workspace live before running this decision.
    pub fn cut_at_live_read(&self) -> Option<Decision> {
        let first = self.actions.iter().position(Action::revokes_or_deletes)?;
        if !self.actions[..first].iter().any(Action::writes_workspace) {
            return None;
        }
        Some(Decision {
            actions: self.actions[..first].to_vec(),
            next: Next::Continue,
        })
    }
}

/// When to observe and decide again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Right away: the actions changed what the next step depends on.
    Continue,
    /// When something changes (a watch event), or at the periodic resync.
    Idle,
    /// After this many seconds, unless something changes first.
    After(u64),
    /// A transient problem (the edge is unreachable): retry with growing delays.
    Backoff,
}

/// One step. Every write is guarded: Workspace writes by its UID, edge deletions by the
/// observed object's UID.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Add the installer's finalizer to the Workspace.
    AddFinalizer,
    /// Remove the installer's finalizer from the Workspace: deletion may finish.
    RemoveFinalizer,
    /// Replace the Workspace's status.
    WriteStatus(Box<WorkspaceStatus>),
    /// Publish an Event on the Workspace.
    Event(Note),
    /// Create the provider's hub ServiceAccount.
    CreateHubServiceAccount(Box<ServiceAccount>),
    /// Bind the provider's hub ServiceAccount to the Recipe's Role.
    CreateHubRoleBinding(Box<RoleBinding>),
    /// Delete an object on the hub in the organization's namespace, if it still has the
    /// observed UID: one that holds the name of the provider's credential but is not the
    /// installer's, or binds another Role than the plan's.
    DeleteOnHub(Deletion),
    /// Take the plan's PlanValues object into the Workspace's ownership.
    OwnPlanValues(Box<OwnValues>),
    /// Mint a token for the provider's hub ServiceAccount and store its kubeconfig in a
    /// Secret on the edge.
    MintRuntimeCredential(Box<MintCredential>),
    /// Create the release namespace on the edge.
    CreateNamespace(Box<Namespace>),
    /// Patch the release namespace's labels (adopt or release it); the patch carries
    /// `test` operations that make it fail if the namespace is not in the state observed.
    PatchNamespace {
        name: String,
        patch: json_patch::Patch,
        what: NamespaceChange,
    },
    /// Create one of the attempt's objects on the edge.
    Create(Box<EdgeObject>),
    /// Delete an object on the edge, if it still has the observed UID.
    Delete(Deletion),
    /// Remove the installer's finalizer from an attempt's Job; the patch tests its UID.
    ReleaseJob {
        namespace: String,
        name: String,
        patch: json_patch::Patch,
    },
    /// Keep the log of an attempt's runner Pod on the hub, for tenants who cannot see the
    /// edge (`kubectl provider logs`). Best effort: a log that cannot be read is said in
    /// the installer's log, and nothing waits for it.
    KeepRunnerLog(RunnerLog),
    /// Mark a Helm release revision left pending by a killed Helm as failed, as Helm
    /// itself does when it is interrupted, so the next `helm upgrade` may proceed.
    MarkReleaseFailed {
        namespace: String,
        secret: String,
        uid: String,
        revision: i64,
        description: String,
    },
    /// Ask the webhook to repair the drifted release: raise spec.retry with the automatic
    /// repair annotation, on the Workspace as read live (see
    /// [`super::patch::request_repair`]). A refusal is said in an Event, not retried at once.
    RequestRepair(RepairRequest),
}

/// What an automatic repair asks for: the installed attempt, by number and ID, and the
/// spec.retry it was judged at.
#[derive(Clone, Debug, PartialEq)]
pub struct RepairRequest {
    pub attempt: i64,
    pub attempt_id: String,
    pub retry: i64,
}

impl Action {
    /// A short name for logs, metrics and fault points.
    pub fn name(&self) -> &'static str {
        match self {
            Action::AddFinalizer => "add-finalizer",
            Action::RemoveFinalizer => "remove-finalizer",
            Action::WriteStatus(_) => "write-status",
            Action::Event(_) => "event",
            Action::CreateHubServiceAccount(_) => "create-hub-service-account",
            Action::CreateHubRoleBinding(_) => "create-hub-role-binding",
            Action::DeleteOnHub(deletion) => match deletion.kind {
                Kind::ServiceAccount => "delete-hub-service-account",
                Kind::RoleBinding => "delete-hub-role-binding",
                _ => "delete-on-hub",
            },
            Action::OwnPlanValues(_) => "own-plan-values",
            Action::MintRuntimeCredential(_) => "mint-runtime-credential",
            Action::CreateNamespace(_) => "create-namespace",
            Action::PatchNamespace { what, .. } => match what {
                NamespaceChange::Adopt => "adopt-namespace",
                NamespaceChange::Release => "release-namespace",
            },
            Action::Create(object) => match **object {
                EdgeObject::ServiceAccount(_) => "create-service-account",
                EdgeObject::Role(_) => "create-role",
                EdgeObject::RoleBinding(_) => "create-role-binding",
                EdgeObject::Secret(_) => "create-values-secret",
                EdgeObject::Job(_) => "create-job",
            },
            Action::Delete(deletion) => match deletion.kind {
                Kind::ServiceAccount => "delete-service-account",
                Kind::Role => "delete-role",
                Kind::RoleBinding => "delete-role-binding",
                Kind::Secret => "delete-values-secret",
                Kind::Job => "delete-job",
            },
            Action::ReleaseJob { .. } => "release-job",
            Action::KeepRunnerLog(_) => "keep-runner-log",
            Action::MarkReleaseFailed { .. } => "mark-release-failed",
            Action::RequestRepair(_) => "request-repair",
        }
    }

    /// Whether the action revokes or deletes something (or releases what holds it): the
    /// shell decides such actions only from a Workspace read live, never from a watch
    /// cache alone.
    pub fn revokes_or_deletes(&self) -> bool {
        matches!(
            self,
            Action::RemoveFinalizer
                | Action::DeleteOnHub(_)
                | Action::Delete(_)
                | Action::ReleaseJob { .. }
                | Action::MarkReleaseFailed { .. }
                | Action::PatchNamespace {
                    what: NamespaceChange::Release,
                    ..
                }
        )
    }

    /// Whether the action writes the Workspace itself, so that the API server answers
    /// with the Workspace as stored.
    pub fn writes_workspace(&self) -> bool {
        matches!(
            self,
            Action::AddFinalizer | Action::WriteStatus(_) | Action::RequestRepair(_)
        )
    }

    /// Whether the action writes to the edge.
    pub fn touches_edge(&self) -> bool {
        matches!(
            self,
            Action::MintRuntimeCredential(_)
                | Action::CreateNamespace(_)
                | Action::PatchNamespace { .. }
                | Action::Create(_)
                | Action::Delete(_)
                | Action::ReleaseJob { .. }
                | Action::MarkReleaseFailed { .. }
        )
    }
}

/// An owner reference to the Workspace, added to a PlanValues object the webhook wrote
/// before the Workspace had a UID (the garbage collector then deletes the values with the
/// Workspace), and its adopted label set. The patch tests the object's UID, so a
/// replacement is never adopted.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnValues {
    pub namespace: String,
    pub name: String,
    pub patch: json_patch::Patch,
}

impl OwnValues {
    /// `labeled`: whether the object has labels already (the patch adds to the map, or
    /// makes it). The owner references become this Workspace alone: a PlanValues object is
    /// named for one Workspace name, only the installer names its owner, and a reference
    /// to another UID is a lost Workspace's of the same name (a hub restored from a backup,
    /// ADR 41), which a garbage collector would otherwise take the values with.
    pub fn new(name: &str, uid: &str, labeled: bool, workspace: &crate::api::Workspace) -> Self {
        use kube::Resource;
        let reference = serde_json::json!({
            "apiVersion": crate::api::Workspace::api_version(&()),
            "kind": crate::api::Workspace::kind(&()),
            "name": workspace.metadata.name.clone().unwrap_or_default(),
            "uid": workspace.metadata.uid.clone().unwrap_or_default(),
        });
        let (path, value) = (
            "/metadata/ownerReferences",
            serde_json::Value::Array(vec![reference]),
        );
        let adopted = crate::plan_values::LABEL_ADOPTED;
        let label = if labeled {
            let escaped = adopted.replace('~', "~0").replace('/', "~1");
            serde_json::json!({"op": "add", "path": format!("/metadata/labels/{escaped}"), "value": "true"})
        } else {
            serde_json::json!({"op": "add", "path": "/metadata/labels", "value": {adopted: "true"}})
        };
        let patch = serde_json::from_value(serde_json::json!([
            {"op": "test", "path": "/metadata/uid", "value": uid},
            {"op": "add", "path": path, "value": value},
            label,
        ]))
        .unwrap_or_else(|_| json_patch::Patch(Vec::new()));
        Self {
            namespace: workspace.metadata.namespace.clone().unwrap_or_default(),
            name: name.to_owned(),
            patch,
        }
    }
}

/// Where an attempt's runner log is, and where it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerLog {
    /// The release namespace and the runner Pod on the edge.
    pub namespace: String,
    pub pod: String,
    /// The attempt it belongs to.
    pub attempt: i64,
}

/// Why a namespace's labels change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespaceChange {
    /// A Workspace takes over a namespace its deleted predecessor released.
    Adopt,
    /// A deleted Workspace leaves its namespace to a later one of the same name.
    Release,
}

/// An attempt object on the edge.
#[derive(Clone, Debug, PartialEq)]
pub enum EdgeObject {
    ServiceAccount(ServiceAccount),
    Role(Role),
    RoleBinding(RoleBinding),
    Secret(Secret),
    Job(Box<Job>),
}

/// The kinds of attempt objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    ServiceAccount,
    Role,
    RoleBinding,
    Secret,
    Job,
}

/// A guarded deletion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    /// The deletion's precondition: the object must still have this UID.
    pub uid: String,
}

/// The provider's runtime credential to mint.
#[derive(Clone, Debug, PartialEq)]
pub struct MintCredential {
    /// The hub ServiceAccount's namespace and name.
    pub hub_namespace: String,
    pub service_account: String,
    /// The Secret on the edge that receives the kubeconfig, with its ownership labels.
    pub secret: Secret,
}

/// An Event on the Workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub warning: bool,
    /// PascalCase, for example `JobCreated`.
    pub reason: &'static str,
    pub message: String,
    /// What the installer did, when it is not the usual `Reconcile`. Events of one reason
    /// and action form one series that keeps its first message; a different action starts
    /// a new Event (each drift found is its own).
    pub action: Option<String>,
}

impl Note {
    pub fn normal(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            warning: false,
            reason,
            message: message.into(),
            action: None,
        }
    }

    pub fn warning(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            warning: true,
            reason,
            message: message.into(),
            action: None,
        }
    }

    /// The same note, reported as `action`.
    pub fn with_action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }
}
