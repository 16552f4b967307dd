//! The decision's working state: the status being built, the actions so far, and the
//! helpers every rule uses. `decide` takes the rules in order; they live in `attempt`,
//! `prepare`, `cleanup` and `delete`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::{JobResult, Workspace, WorkspaceStatus};

use super::{
    action::{Action, Decision, Deletion, Kind, Next, Note},
    conditions::{self, Activity, Failure, reason},
    names,
    observation::{EdgeObjects, EdgeState, Observation},
    settings::Settings,
};

/// What a decision reads is fixed when it starts (read through the methods below); what
/// the rules decide (the status, its activity and failure, the actions) they write here.
pub(super) struct DecisionDraft<'a> {
    observation: &'a Observation<'a>,
    settings: &'a Settings,
    ws: &'a Workspace,
    uid: String,
    /// `<org>/<name>`.
    key: String,
    /// The status as the API has it (or as the last queued write leaves it).
    written: WorkspaceStatus,
    /// The status being decided.
    pub(super) status: WorkspaceStatus,
    pub(super) activity: Activity,
    pub(super) failure: Option<Failure>,
    pub(super) actions: Vec<Action>,
}

impl<'a> DecisionDraft<'a> {
    pub fn new(observation: &'a Observation<'a>, settings: &'a Settings) -> Self {
        let ws = observation.workspace;
        let status = ws.status.clone().unwrap_or_default();
        let failure = match status.job_result {
            Some(JobResult::Failed | JobResult::Rejected) => conditions::recorded_failure(&status),
            _ => None,
        };
        Self {
            observation,
            settings,
            ws,
            uid: ws.metadata.uid.clone().unwrap_or_default(),
            key: names::workspace_key(
                ws.metadata.namespace.as_deref().unwrap_or_default(),
                ws.metadata.name.as_deref().unwrap_or_default(),
            ),
            written: status.clone(),
            status,
            activity: Activity::idle(reason::AWAITING_PLAN, ""),
            failure,
            actions: Vec::new(),
        }
    }

    /// What was observed: the Workspace, the seal check, the edge and its objects.
    pub fn observation(&self) -> &'a Observation<'a> {
        self.observation
    }

    pub fn settings(&self) -> &'a Settings {
        self.settings
    }

    /// The Workspace decided about.
    pub fn ws(&self) -> &'a Workspace {
        self.ws
    }

    /// The Workspace's UID (empty before it has one).
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// `<org>/<name>`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Queues a status write if the status differs from what the API has.
    pub fn flush(&mut self) {
        conditions::settle(
            &mut self.status,
            self.ws.metadata.generation,
            self.observation.now,
            &self.activity,
            self.failure.as_ref(),
        );
        if self.status != self.written {
            self.written = self.status.clone();
            self.actions
                .push(Action::WriteStatus(Box::new(self.status.clone())));
        }
    }

    /// Queues an edge action after writing down everything decided so far: the record
    /// always reaches the hub before the edge changes.
    pub fn edge(&mut self, action: Action) {
        self.flush();
        self.actions.push(action);
    }

    /// Queues the deletion of the edge object `kind` `namespace/name`, guarded by its UID.
    pub fn delete_on_edge(&mut self, kind: Kind, namespace: &str, name: &str, uid: &str) {
        self.edge(Action::Delete(Deletion {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            uid: uid.to_owned(),
        }));
    }

    /// Rule `each_attempt_has_its_own_events`: an Event recorder folds Events of one
    /// reason and action into one series that keeps its first message, so a note about the
    /// recorded attempt is reported as that attempt's action (`Attempt2`): a second
    /// attempt's JobSucceeded is not shown with the first attempt's words.
    pub fn event(&mut self, note: Note) {
        let note = match (&note.action, self.status.attempt) {
            (None, Some(attempt)) => note.with_action(format!("Attempt{attempt}")),
            _ => note,
        };
        self.actions.push(Action::Event(note));
    }

    pub fn finish(mut self, next: Next) -> Decision {
        self.flush();
        Decision {
            actions: self.actions,
            next,
        }
    }

    pub fn has_finalizer(&self) -> bool {
        self.ws
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|f| f == names::FINALIZER))
    }

    pub fn edge_name(&self) -> String {
        self.status
            .target
            .as_ref()
            .map(|t| t.edge.clone())
            .unwrap_or_default()
    }

    /// The release namespace of the recorded attempt; empty before one is recorded.
    pub fn target_namespace(&self) -> String {
        self.status
            .target
            .as_ref()
            .map(|target| target.namespace.clone())
            .unwrap_or_default()
    }

    pub fn now(&self) -> Time {
        Time(self.observation.now)
    }

    /// The edge objects when the edge is Ready; otherwise says why the Workspace waits and
    /// when to look again.
    pub fn reachable(&mut self, doing: &str) -> Result<EdgeObjects, Next> {
        let edge = self.edge_name();
        match &self.observation.edge {
            EdgeState::Ready(route) => {
                if let Some(target) = self.status.target.as_mut()
                    && target.server.as_deref() != Some(route.server.as_str())
                {
                    target.server = Some(route.server.clone());
                }
                // A Ready edge whose objects were not read: read them and decide again.
                self.observation.edge_objects.clone().ok_or(Next::Continue)
            }
            EdgeState::Missing => {
                self.activity = Activity::idle(
                    reason::EDGE_NOT_READY,
                    format!(
                        "waiting to {doing}: no Edge named {edge:?} is registered; ask the platform team to register it"
                    ),
                );
                Err(Next::After(60))
            }
            EdgeState::Unprobed => {
                self.activity = Activity::idle(
                    reason::EDGE_NOT_READY,
                    format!("waiting to {doing}: edge {edge:?} has not been probed yet"),
                );
                Err(Next::After(2))
            }
            EdgeState::NotReady(why) => {
                self.activity = Activity::idle(
                    reason::EDGE_NOT_READY,
                    format!("waiting to {doing}: edge {edge:?} is not Ready: {why}"),
                );
                Err(Next::After(60))
            }
            EdgeState::Unreachable(why) => {
                self.activity = Activity::idle(
                    reason::EDGE_UNREACHABLE,
                    format!(
                        "waiting to {doing}: the API of edge {edge:?} is unreachable ({why}); retrying with backoff"
                    ),
                );
                Err(Next::Backoff)
            }
        }
    }

    /// Records the attempt's terminal result; the next edge action writes it first.
    pub fn record_result(
        &mut self,
        result: JobResult,
        finished_at: Option<Time>,
        failure: Option<Failure>,
    ) {
        let finished_at = finished_at.unwrap_or_else(|| self.now());
        self.status.job_result = Some(result);
        self.status.finished_at = Some(finished_at.clone());
        // Set by whoever saw the Job end (`track_job`); no other result has one.
        self.status.finished_resource_version = None;
        self.status.cleaned_up = false;
        let message = failure.as_ref().map(|f| f.message.clone());
        if let Some(record) = self
            .status
            .attempts
            .iter_mut()
            .rev()
            .find(|r| Some(r.attempt) == self.status.attempt)
        {
            record.result = Some(result);
            record.finished_at = Some(finished_at);
            record.message = message;
        }
        self.failure = failure;
    }

    /// Refuses to run the attempt: nothing (more) is created for it.
    pub fn reject(&mut self, reason: &'static str, message: String) {
        self.event(Note::warning(reason, message.clone()));
        self.record_result(
            JobResult::Rejected,
            None,
            Some(Failure::new(reason, message)),
        );
    }
}
