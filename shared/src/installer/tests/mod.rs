//! The installer's rules, a file per rule or group of related rules, with a row per case;
//! here the builders and readers they share.

use std::collections::BTreeMap;

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};
use rstest::rstest;
use serde_json::json;

use crate::api::{
    ChartRef, ExecutionRule, JobResult, Phase, Plan, Preparation, RuntimeCredential, Seal,
    SealedPlan, Target, Workspace, WorkspaceIdentity, WorkspaceSpec, WorkspaceStatus,
};

use super::*;

mod attempts;
mod authorization;
mod credential;
mod deletion;
mod edge;
mod job;
mod lost_namesake;
mod namespace;
mod reads;
mod result;
mod sealing;
mod values;

const UID: &str = "uid-ws-1";
const OTHER_UID: &str = "uid-ws-0";

pub(super) fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

pub(super) fn plan(attempt: i64) -> Plan {
    Plan {
        attempt,
        attempt_id: format!("a{attempt}"),
        retry: attempt - 1,
        workspace: WorkspaceIdentity {
            namespace: "org-a".into(),
            name: "demo".into(),
            uid: if attempt == 1 {
                String::new()
            } else {
                UID.into()
            },
        },
        chart: ChartRef {
            repository: "http://127.0.0.1:8080/charts".into(),
            name: "hello".into(),
        },
        namespace: "hello-ns".into(),
        values: Some(json!({"greeting": "hi"})),
        cluster: "cluster-1".into(),
        edge_workspace_uuid: "ews-1".into(),
        job: format!("hello-0a1b2c3d-{attempt}"),
        execution: vec![ExecutionRule {
            api_groups: vec![String::new()],
            resources: vec!["configmaps".into()],
            verbs: vec!["get".into(), "create".into()],
        }],
        sealed_at: Some(Time(now())),
        ..crate::testing::plan()
    }
}

pub(super) fn workspace(plan: Option<Plan>, status: Option<WorkspaceStatus>) -> Workspace {
    Workspace {
        metadata: ObjectMeta {
            name: Some("demo".into()),
            namespace: Some("org-a".into()),
            uid: Some(UID.into()),
            generation: Some(1),
            resource_version: Some("10".into()),
            finalizers: Some(vec![names::FINALIZER.into()]),
            ..Default::default()
        },
        spec: WorkspaceSpec {
            recipe: "hello".into(),
            plan: plan.map(|plan| SealedPlan {
                plan,
                seal: Seal {
                    key_id: "k".into(),
                    algorithm: "Ed25519".into(),
                    signature: "s".into(),
                },
            }),
            ..crate::testing::workspace_spec()
        },
        status,
    }
}

/// The status of attempt `attempt` once bound (and prepared, with a Job when `job_uid`).
pub(super) fn bound(attempt: i64, job_uid: Option<&str>) -> WorkspaceStatus {
    let plan = plan(attempt);
    WorkspaceStatus {
        attempt: Some(attempt),
        attempt_id: Some(plan.attempt_id.clone()),
        workspace_uid: Some(UID.into()),
        job: Some(plan.job.clone()),
        target: Some(Target {
            edge: "edge-1".into(),
            cluster: "cluster-1".into(),
            namespace: "hello-ns".into(),
            server: Some("https://edge".into()),
        }),
        job_uid: job_uid.map(String::from),
        preparation: Some(Preparation {
            preparation_id: "p1".into(),
            preparation_expires_at: Time(now().checked_add(jiff_secs(60)).unwrap()),
        }),
        namespace_admission_known: true,
        namespace_admitted: true,
        namespace_uid: Some("ns-uid".into()),
        attempts: vec![crate::api::AttemptRecord {
            attempt,
            attempt_id: plan.attempt_id.clone(),
            version: plan.version.clone(),
            owner: "alice".into(),
            job: plan.job.clone(),
            result: None,
            finished_at: None,
            message: None,
            cause: None,
            restores: None,
            kept: None,
        }],
        ..Default::default()
    }
}

pub(super) fn jiff_secs(s: i64) -> k8s_openapi::jiff::SignedDuration {
    k8s_openapi::jiff::SignedDuration::from_secs(s)
}

pub(super) fn ready() -> EdgeState {
    EdgeState::Ready(EdgeRoute {
        cluster: "cluster-1".into(),
        workspace_uuid: "ews-1".into(),
        server: "https://edge".into(),
    })
}

fn object(uid: &str, owner: &str, attempt_id: &str, preparation: &str) -> ObjectState {
    ObjectState {
        uid: uid.into(),
        resource_version: "1".into(),
        labels: BTreeMap::from([
            (names::LABEL_MANAGED_BY.into(), names::MANAGED_BY.into()),
            (names::LABEL_WORKSPACE_UID.into(), owner.into()),
            (names::LABEL_ATTEMPT_ID.into(), attempt_id.into()),
            (names::LABEL_PREPARATION_ID.into(), preparation.into()),
        ]),
        annotations: BTreeMap::from([(names::ANNOTATION_WORKSPACE.into(), "org-a/demo".into())]),
        ..Default::default()
    }
}

fn namespace_of(owner: &str) -> NamespaceState {
    let mut ns = object("ns-uid", owner, "", "p1");
    ns.labels.remove(names::LABEL_ATTEMPT_ID);
    ns
}

/// Everything of attempt `attempt` present on the edge, prepared as `p1`.
fn prepared(attempt: i64) -> EdgeObjects {
    let id = format!("a{attempt}");
    EdgeObjects {
        namespace: Some(namespace_of(UID)),
        service_account: Some(object("sa", UID, &id, "p1")),
        role: Some(object("role", UID, &id, "p1")),
        role_binding: Some(object("rb", UID, &id, "p1")),
        values: Some(object("values", UID, &id, "p1")),
        ..Default::default()
    }
}

pub(super) fn job(attempt: i64, outcome: JobOutcome, finalized: bool) -> JobState {
    let mut o = object("job-uid", UID, &format!("a{attempt}"), "p1");
    if finalized {
        o.finalizers = vec![names::FINALIZER.into()];
    }
    JobState {
        object: o,
        outcome,
        finished_at: Some(Time(now())),
        runner: None,
    }
}

fn failed() -> JobOutcome {
    JobOutcome::Failed {
        reason: "BackoffLimitExceeded".into(),
        message: "Job has reached the specified backoff limit".into(),
    }
}

pub(super) struct Case<'a> {
    pub ws: &'a Workspace,
    pub seal: SealCheck,
    pub edge: EdgeState,
    pub edge_objects: Option<EdgeObjects>,
    pub hub: Option<HubObjects>,
    pub authorization: Authorization,
    pub values: ValuesCheck,
    pub settings: Settings,
}

impl<'a> Case<'a> {
    pub(super) fn new(ws: &'a Workspace) -> Self {
        Self {
            ws,
            seal: SealCheck::Verified,
            edge: ready(),
            edge_objects: Some(EdgeObjects::default()),
            hub: None,
            authorization: Authorization::Allowed,
            values: ValuesCheck::NotRead,
            settings: Settings::default(),
        }
    }
    pub(super) fn decide(&self) -> Decision {
        decide(
            &Observation {
                workspace: self.ws,
                seal: self.seal.clone(),
                edge: self.edge.clone(),
                edge_objects: self.edge_objects.clone(),
                hub: self.hub.clone(),
                authorization: self.authorization.clone(),
                values: self.values.clone(),
                now: now(),
            },
            &self.settings,
        )
    }
}

pub(super) fn steps(decision: &Decision) -> Vec<&'static str> {
    decision
        .actions
        .iter()
        .filter(|a| !matches!(a, Action::Event(_)))
        .map(Action::name)
        .collect()
}

/// The Jobs a decision deletes, as (name, UID).
fn deleted_jobs(decision: &Decision) -> Vec<(String, String)> {
    decision
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Delete(d) if d.kind == Kind::Job => Some((d.name.clone(), d.uid.clone())),
            _ => None,
        })
        .collect()
}

/// The Jobs whose finalizer a decision removes, by name.
fn released_jobs(decision: &Decision) -> Vec<&str> {
    decision
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::ReleaseJob { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

/// The steps on the edge and the hub, without status writes and events.
fn edge_steps(decision: &Decision) -> Vec<&'static str> {
    steps(decision)
        .into_iter()
        .filter(|s| *s != "write-status")
        .collect()
}

pub(super) fn events(decision: &Decision) -> Vec<&'static str> {
    decision
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Event(note) => Some(note.reason),
            _ => None,
        })
        .collect()
}

pub(super) fn last_status(decision: &Decision) -> WorkspaceStatus {
    decision
        .actions
        .iter()
        .rev()
        .find_map(|a| match a {
            Action::WriteStatus(status) => Some((**status).clone()),
            _ => None,
        })
        .expect("a status write")
}

pub(super) fn condition(status: &WorkspaceStatus, kind: &str) -> (String, String) {
    let c = status
        .condition(kind)
        .unwrap_or_else(|| panic!("condition {kind}"));
    (c.status.clone(), c.reason.clone())
}

pub(super) fn edge_actions(decision: &Decision) -> usize {
    decision.actions.iter().filter(|a| a.touches_edge()).count()
}
