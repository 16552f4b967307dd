//! The installer's rules, one test per rule, with a row per case.

use std::collections::BTreeMap;

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};
use serde_json::json;

use crate::api::{
    ChartRef, ExecutionRule, JobResult, Owner, Phase, Plan, Preparation, RuntimeCredential, Seal,
    SealedPlan, Target, Workspace, WorkspaceIdentity, WorkspaceSpec, WorkspaceStatus,
};

use super::*;

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
        org: "org-a".into(),
        provider: "hello".into(),
        owner: Owner {
            username: "alice".into(),
            ..Default::default()
        },
        chart: ChartRef {
            repository: "http://127.0.0.1:8080/charts".into(),
            name: "hello".into(),
        },
        version: "0.1.0".into(),
        release: "hello".into(),
        namespace: "hello-ns".into(),
        values: json!({"greeting": "hi"}),
        edge_name: "edge-1".into(),
        cluster: "cluster-1".into(),
        edge_workspace_uuid: "ews-1".into(),
        job: format!("hello-0a1b2c3d-{attempt}"),
        execution: vec![ExecutionRule {
            api_groups: vec![String::new()],
            resources: vec!["configmaps".into()],
            verbs: vec!["get".into(), "create".into()],
        }],
        runtime_credential: None,
        sealed_at: Some(Time(now())),
        dry_run: false,
        cause: None,
        restores: None,
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
            edge: "edge-1".into(),
            version: None,
            values: None,
            retry: None,
            plan: plan.map(|plan| SealedPlan {
                plan,
                seal: Seal {
                    key_id: "k".into(),
                    algorithm: "Ed25519".into(),
                    signature: "s".into(),
                },
            }),
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
fn prepared(attempt: i64) -> Remote {
    let id = format!("a{attempt}");
    Remote {
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
    pub remote: Option<Remote>,
    pub hub: Option<HubObjects>,
    pub authorization: Authorization,
}

impl<'a> Case<'a> {
    pub(super) fn new(ws: &'a Workspace) -> Self {
        Self {
            ws,
            seal: SealCheck::Verified,
            edge: ready(),
            remote: Some(Remote::default()),
            hub: None,
            authorization: Authorization::Allowed,
        }
    }
    pub(super) fn decide(&self) -> Decision {
        decide(
            &Observed {
                workspace: self.ws,
                seal: self.seal.clone(),
                edge: self.edge.clone(),
                remote: self.remote.clone(),
                hub: self.hub.clone(),
                authorization: self.authorization.clone(),
                now: now(),
            },
            &Settings::default(),
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
        .conditions
        .iter()
        .find(|c| c.type_ == kind)
        .unwrap_or_else(|| panic!("condition {kind}"));
    (c.status.clone(), c.reason.clone())
}

pub(super) fn edge_actions(decision: &Decision) -> usize {
    decision.actions.iter().filter(|a| a.touches_edge()).count()
}

#[test]
fn unsealed_waits_for_the_webhook() {
    let ws = workspace(None, None);
    let decision = Case::new(&ws).decide();
    assert_eq!(steps(&decision), ["write-status"]);
    let status = last_status(&decision);
    assert_eq!(status.phase, Some(Phase::Pending));
    assert_eq!(
        condition(&status, "Ready"),
        ("False".into(), "AwaitingPlan".into())
    );
}

#[test]
fn new_attempt_binds_to_the_workspace() {
    let mut ws = workspace(Some(plan(1)), None);
    ws.metadata.finalizers = None;
    let decision = Case::new(&ws).decide();
    // One pass prepares everything: the record first, then the namespace and what goes
    // into it, the Job last. If a create fails, the shell runs nothing after it.
    assert_eq!(
        steps(&decision),
        [
            "add-finalizer",
            "write-status",
            "create-namespace",
            "create-service-account",
            "create-role",
            "create-role-binding",
            "create-job"
        ]
    );
    assert!(
        events(&decision).is_empty(),
        "the result's Event says it all"
    );
    let created = decision
        .actions
        .iter()
        .find_map(|a| match a {
            Action::CreateNamespace(ns) => Some(ns.metadata.labels.clone().unwrap_or_default()),
            _ => None,
        })
        .expect("a namespace");
    // The edge's confinement policy admits no namespace from the installer without it.
    assert_eq!(created["pod-security.kubernetes.io/enforce"], "baseline");
    let status = last_status(&decision);
    assert_eq!(status.attempt, Some(1));
    assert_eq!(status.workspace_uid.as_deref(), Some(UID));
    assert_eq!(status.attempts.len(), 1);
    assert!(
        status.preparation.is_some(),
        "the preparation is recorded first"
    );
    assert_eq!(status.phase, Some(Phase::Progressing));
    assert_eq!(decision.next, Next::Continue);
}

#[test]
fn plan_must_verify() {
    let mut other_name = plan(1);
    other_name.workspace.name = "other".into();
    let mut other_uid = plan(2);
    other_uid.workspace.uid = OTHER_UID.into();
    let mut no_uid = plan(2);
    no_uid.workspace.uid = String::new();
    let mut other_org = plan(1);
    other_org.org = "org-b".into();
    let mut dry_run = plan(1);
    dry_run.dry_run = true;
    let sealer = crate::seal::Sealer::from_seed([4; 32]);
    let keyring = crate::seal::Keyring::from(&sealer);
    let forger = crate::seal::Sealer::from_seed([5; 32]);
    let rows: [(&str, SealedPlan); 6] = [
        ("bad signature", forger.seal(plan(1)).unwrap()),
        ("sealed for another name", sealer.seal(other_name).unwrap()),
        ("sealed for another UID", sealer.seal(other_uid).unwrap()),
        ("later attempt without UID", sealer.seal(no_uid).unwrap()),
        ("another organization", sealer.seal(other_org).unwrap()),
        ("sealed for a dry run", sealer.seal(dry_run).unwrap()),
    ];
    for (row, sealed) in rows {
        let plan = sealed.plan.clone();
        let mut ws = workspace(None, None);
        ws.spec.plan = Some(sealed);
        let mut case = Case::new(&ws);
        case.seal = SealCheck::of(&ws, Ok(&keyring));
        assert!(matches!(case.seal, SealCheck::Invalid(_)), "{row}");
        let decision = case.decide();
        assert_eq!(edge_actions(&decision), 0, "{row}: nothing on the edge");
        let status = last_status(&decision);
        assert_eq!(status.job_result, Some(JobResult::Rejected), "{row}");
        assert_eq!(status.attempt, Some(plan.attempt), "{row}");
        assert!(status.cleaned_up, "{row}");
        assert_eq!(
            condition(&status, "Failed"),
            ("True".into(), "SealInvalid".into()),
            "{row}"
        );
        assert_eq!(status.phase, Some(Phase::Failed), "{row}");
    }
}

#[test]
fn keys_unavailable_wait_without_judging() {
    let ws = workspace(Some(plan(1)), None);
    let mut case = Case::new(&ws);
    case.seal = SealCheck::KeysUnavailable("ConfigMap not found".into());
    let decision = case.decide();
    assert_eq!(edge_actions(&decision), 0);
    assert_eq!(decision.next, Next::After(30));
    let status = last_status(&decision);
    assert_eq!(status.job_result, None);
    assert_eq!(
        condition(&status, "Progressing").1,
        "SealingKeysUnavailable"
    );
}

#[test]
fn edge_not_ready_blocks_creation() {
    let rows = [
        (EdgeState::Missing, "EdgeNotReady", Next::After(60)),
        (EdgeState::Unprobed, "EdgeNotReady", Next::After(2)),
        (
            EdgeState::NotReady("not probed".into()),
            "EdgeNotReady",
            Next::After(60),
        ),
        (
            EdgeState::Unreachable("connection refused".into()),
            "EdgeUnreachable",
            Next::Backoff,
        ),
    ];
    for (edge, reason, next) in rows {
        let ws = workspace(Some(plan(1)), None);
        let mut case = Case::new(&ws);
        case.edge = edge;
        case.remote = None;
        let decision = case.decide();
        assert_eq!(edge_actions(&decision), 0, "{reason}");
        assert_eq!(decision.next, next, "{reason}");
        let status = last_status(&decision);
        assert_eq!(
            status.attempt,
            Some(1),
            "{reason}: bound, so the attempt is pinned"
        );
        assert!(status.preparation.is_none(), "{reason}: nothing prepared");
        assert_eq!(status.phase, Some(Phase::Pending), "{reason}");
        assert_eq!(condition(&status, "Ready"), ("False".into(), reason.into()));
        assert_eq!(
            condition(&status, "Progressing"),
            ("False".into(), reason.into())
        );
    }
}

#[test]
fn edge_unreachable_mid_attempt_keeps_the_record() {
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Unreachable("connection refused".into());
    case.remote = None;
    let decision = case.decide();
    assert_eq!(edge_actions(&decision), 0);
    assert_eq!(decision.next, Next::Backoff);
    let status = last_status(&decision);
    assert_eq!(status.job_uid.as_deref(), Some("job-uid"));
    assert_eq!(status.phase, Some(Phase::Progressing));
    assert_eq!(condition(&status, "Progressing").1, "EdgeUnreachable");
}

#[test]
fn namespace_is_created_and_recorded() {
    let mut status = bound(1, None);
    status.namespace_admission_known = false;
    status.namespace_admitted = false;
    status.namespace_uid = None;
    let ws = workspace(Some(plan(1)), Some(status));
    let mut case = Case::new(&ws);
    case.remote = Some(Remote {
        namespace: Some(namespace_of(UID)),
        ..Default::default()
    });
    let decision = case.decide();
    assert_eq!(
        steps(&decision),
        [
            "write-status",
            "create-service-account",
            "create-role",
            "create-role-binding",
            "create-job"
        ]
    );
    let status = last_status(&decision);
    assert!(status.namespace_admission_known && status.namespace_admitted);
    assert_eq!(status.namespace_uid.as_deref(), Some("ns-uid"));
}

#[test]
fn namespace_of_someone_else_is_refused() {
    let mut unlabelled = namespace_of(UID);
    unlabelled.labels.clear();
    unlabelled.annotations.clear();
    let mut released_elsewhere = namespace_of(OTHER_UID);
    released_elsewhere
        .labels
        .insert(names::LABEL_RELEASED.into(), "true".into());
    released_elsewhere
        .annotations
        .insert(names::ANNOTATION_WORKSPACE.into(), "org-a/another".into());
    let rows = [
        ("no ownership label", unlabelled),
        ("another Workspace's", namespace_of(OTHER_UID)),
        (
            "released by a Workspace of another name",
            released_elsewhere,
        ),
    ];
    for (row, ns) in rows {
        let ws = workspace(Some(plan(1)), Some(bound(1, None)));
        let mut case = Case::new(&ws);
        case.remote = Some(Remote {
            namespace: Some(ns),
            ..Default::default()
        });
        let decision = case.decide();
        assert_eq!(
            steps(&decision),
            ["write-status"],
            "{row}: no Job, nothing created"
        );
        let status = last_status(&decision);
        assert_eq!(status.job_result, Some(JobResult::Rejected), "{row}");
        assert!(
            status.namespace_admission_known && !status.namespace_admitted,
            "{row}"
        );
        assert_eq!(
            condition(&status, "Failed"),
            ("True".into(), "NamespaceNotAdmitted".into()),
            "{row}"
        );
        assert!(status.cleaned_up, "{row}");
    }
}

#[test]
fn released_namespace_is_adopted() {
    let mut ns = namespace_of(OTHER_UID);
    ns.labels
        .insert(names::LABEL_RELEASED.into(), "true".into());
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.remote = Some(Remote {
        namespace: Some(ns),
        ..Default::default()
    });
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status", "adopt-namespace"]);
    let Some(Action::PatchNamespace { patch, .. }) = decision
        .actions
        .iter()
        .find(|a| a.name() == "adopt-namespace")
    else {
        panic!("adopt")
    };
    let text = serde_json::to_string(patch).unwrap();
    assert!(text.contains(OTHER_UID) && text.contains(UID), "{text}");
}

#[test]
fn job_is_created_with_the_pinned_plan() {
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.remote = Some(prepared(1));
    let decision = case.decide();
    assert_eq!(edge_steps(&decision), ["create-job"]);
    assert!(events(&decision).is_empty());
    let Some(Action::Create(object)) = decision.actions.iter().find(|a| a.name() == "create-job")
    else {
        panic!("create-job")
    };
    let EdgeObject::Job(job) = &**object else {
        panic!("a Job")
    };
    let spec = job.spec.as_ref().unwrap();
    assert_eq!(spec.backoff_limit, Some(0));
    assert_eq!(spec.active_deadline_seconds, Some(900));
    assert_eq!(
        job.metadata.finalizers.as_deref(),
        Some(&[names::FINALIZER.to_owned()][..])
    );
    let labels = job.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[names::LABEL_WORKSPACE_UID], UID);
    assert_eq!(labels[names::LABEL_ATTEMPT_ID], "a1");
    assert_eq!(labels[names::LABEL_PREPARATION_ID], "p1");
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("hello-0a1b2c3d-1-runner")
    );
    let container = &pod.containers[0];
    assert_eq!(container.command.as_deref(), Some(&["helm".to_owned()][..]));
    let args = container.args.clone().unwrap();
    assert_eq!(
        args[..6],
        [
            "upgrade",
            "--install",
            "--repo=http://127.0.0.1:8080/charts",
            "--version=0.1.0",
            "--namespace=hello-ns",
            "--values=/etc/providers/values/values.yaml",
        ]
    );
    // Release and chart come last, after `--`: nothing in a plan reads as a flag.
    assert_eq!(args[args.len() - 3..], ["--", "hello", "hello"]);
}

/// The Job that `decision` creates.
fn created_job(decision: &Decision) -> Option<k8s_openapi::api::batch::v1::Job> {
    decision.actions.iter().find_map(|a| match a {
        Action::Create(object) => match &**object {
            EdgeObject::Job(job) => Some((**job).clone()),
            _ => None,
        },
        _ => None,
    })
}

#[test]
fn values_ride_in_the_job_and_in_a_secret_only_when_too_large() {
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    let mut remote = prepared(1);
    remote.values = None;
    case.remote = Some(remote.clone());
    let decision = case.decide();
    assert!(
        !steps(&decision).contains(&"create-values-secret"),
        "{:?}",
        steps(&decision)
    );
    let job = created_job(&decision).expect("the Job");
    let template = job.spec.as_ref().unwrap().template.clone();
    let text = &template
        .metadata
        .as_ref()
        .unwrap()
        .annotations
        .as_ref()
        .unwrap()[names::ANNOTATION_VALUES];
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(text).unwrap(),
        json!({"greeting": "hi"})
    );
    let volume = &template.spec.as_ref().unwrap().volumes.as_ref().unwrap()[0];
    let item = &volume
        .downward_api
        .as_ref()
        .expect("downwardAPI")
        .items
        .as_ref()
        .unwrap()[0];
    assert_eq!(item.path, names::VALUES_FILE);
    assert_eq!(
        item.field_ref.as_ref().unwrap().field_path,
        "metadata.annotations['providers.platform.dev/values']"
    );

    // Values over the annotation limit travel in the values Secret, mounted instead.
    let mut large = plan(1);
    large.values = json!({"greeting": "x".repeat(names::VALUES_ANNOTATION_LIMIT)});
    let ws = workspace(Some(large), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.remote = Some(remote);
    let decision = case.decide();
    let Some(Action::Create(object)) = decision
        .actions
        .iter()
        .find(|a| a.name() == "create-values-secret")
    else {
        panic!("a values Secret: {:?}", steps(&decision))
    };
    let EdgeObject::Secret(secret) = &**object else {
        panic!("a Secret")
    };
    let data = &secret.data.as_ref().unwrap()[names::VALUES_FILE].0;
    assert_eq!(
        data.len(),
        names::VALUES_ANNOTATION_LIMIT + "{\"greeting\":\"\"}".len()
    );
    let order = steps(&decision);
    let at = |step| order.iter().position(|s| *s == step).unwrap();
    assert!(at("create-values-secret") < at("create-job"), "{order:?}");
    let job = created_job(&decision).unwrap();
    let volume = &job.spec.unwrap().template.spec.unwrap().volumes.unwrap()[0];
    assert!(volume.secret.is_some() && volume.downward_api.is_none());
}

#[test]
fn job_uid_is_recorded_while_it_runs() {
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    let mut remote = prepared(1);
    remote.job = Some(job(1, JobOutcome::Running, true));
    case.remote = Some(remote);
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status"]);
    let status = last_status(&decision);
    assert_eq!(status.job_uid.as_deref(), Some("job-uid"));
    assert_eq!(status.phase, Some(Phase::Progressing));
    assert_eq!(
        condition(&status, "Progressing"),
        ("True".into(), "JobRunning".into())
    );
}

#[test]
fn job_result_is_recorded_before_revocation() {
    let rows = [
        (JobOutcome::Succeeded, JobResult::Succeeded, "False"),
        (failed(), JobResult::Failed, "True"),
    ];
    for (outcome, result, failed_condition) in rows {
        let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
        let mut case = Case::new(&ws);
        let mut remote = prepared(1);
        remote.job = Some(job(1, outcome, true));
        case.remote = Some(remote);
        let decision = case.decide();
        assert_eq!(
            steps(&decision),
            [
                "write-status",
                "delete-service-account",
                "delete-role",
                "delete-role-binding",
                "delete-values-secret",
                "release-job",
                "write-status"
            ],
            "{result:?}: result first, then identity, then the Job's finalizer, cleanup last"
        );
        let writes: Vec<&WorkspaceStatus> = decision
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::WriteStatus(status) => Some(&**status),
                _ => None,
            })
            .collect();
        let first = writes[0];
        assert_eq!(first.job_result, Some(result));
        assert!(first.finished_at.is_some());
        assert!(!first.cleaned_up);
        assert_eq!(first.attempts[0].result, Some(result));
        assert_eq!(condition(first, "Failed").0, failed_condition);
        assert_eq!(condition(first, "Ready").0, "False", "not before cleanup");
        let last = writes[1];
        assert!(last.cleaned_up, "recorded after revocation and release");
        assert_eq!(decision.next, Next::Idle);
    }
}

#[test]
fn cleanup_is_recorded_last() {
    let mut status = bound(1, Some("job-uid"));
    status.job_result = Some(JobResult::Succeeded);
    status.finished_at = Some(Time(now()));
    let ws = workspace(Some(plan(1)), Some(status));
    let mut case = Case::new(&ws);
    case.remote = Some(Remote {
        namespace: Some(namespace_of(UID)),
        job: Some(job(1, JobOutcome::Succeeded, false)),
        ..Default::default()
    });
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status"]);
    let status = last_status(&decision);
    assert!(status.cleaned_up);
    assert_eq!(status.phase, Some(Phase::Succeeded));
    assert_eq!(
        condition(&status, "Ready"),
        ("True".into(), "Installed".into())
    );
    assert_eq!(condition(&status, "Progressing").0, "False");
    assert_eq!(decision.next, Next::Idle);
}

#[test]
fn crash_between_cleanup_steps_repeats_nothing_harmful() {
    let mut recorded = bound(1, Some("job-uid"));
    recorded.job_result = Some(JobResult::Succeeded);
    recorded.finished_at = Some(Time(now()));
    let mut partly_revoked = prepared(1);
    partly_revoked.service_account = None;
    partly_revoked.role = None;
    partly_revoked.job = Some(job(1, JobOutcome::Succeeded, true));
    let mut revoked = Remote {
        namespace: Some(namespace_of(UID)),
        ..Default::default()
    };
    revoked.job = Some(job(1, JobOutcome::Succeeded, true));
    let rows: [(&str, Remote, &[&str]); 2] = [
        (
            "after the result, mid-revocation",
            partly_revoked,
            &["delete-role-binding", "delete-values-secret", "release-job"],
        ),
        ("after revocation", revoked, &["release-job"]),
    ];
    for (row, remote, expected) in rows {
        let ws = workspace(Some(plan(1)), Some(recorded.clone()));
        let mut case = Case::new(&ws);
        case.remote = Some(remote);
        let decision = case.decide();
        let got: Vec<_> = steps(&decision)
            .into_iter()
            .filter(|s| *s != "write-status")
            .collect();
        assert_eq!(got, expected, "{row}");
        assert!(
            !decision
                .actions
                .iter()
                .any(|a| a.name().starts_with("create")),
            "{row}: nothing is created again"
        );
    }
}

#[test]
fn a_failure_says_why_in_helms_words() {
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    let mut case = Case::new(&ws);
    let mut remote = prepared(1);
    let mut failed_job = job(1, failed(), true);
    failed_job.runner = Some(RunnerPod {
        name: "hello-0a1b2c3d-1-x7k2p".into(),
        message: Some(
            "\u{1b}[1mError:\u{1b}[0m INSTALLATION FAILED: chart \"hello\" version \"9.9.9\" not found in http://127.0.0.1:1 repository\n".into(),
        ),
    });
    remote.job = Some(failed_job);
    case.remote = Some(remote);
    let decision = case.decide();
    let status = last_status(&decision);
    let (_, _, message) = {
        let c = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Failed")
            .unwrap();
        (c.status.clone(), c.reason.clone(), c.message.clone())
    };
    assert!(
        message.contains("Error: INSTALLATION FAILED: chart \"hello\" version \"9.9.9\" not found"),
        "{message}"
    );
    assert!(!message.contains('\u{1b}'), "{message}");
    assert!(!message.contains("see its logs on edge"), "{message}");
    assert_eq!(
        status.attempts[0].message.as_deref(),
        Some(message.as_str()),
        "the attempt's record says the same"
    );
    assert!(
        decision.actions.iter().any(|a| matches!(
            a,
            Action::KeepRunnerLog(log) if log.pod == "hello-0a1b2c3d-1-x7k2p" && log.attempt == 1
        )),
        "the runner's log is kept"
    );
    // Bounded, whatever helm printed.
    let mut remote = prepared(1);
    let mut noisy = job(1, failed(), true);
    noisy.runner = Some(RunnerPod {
        name: "p".into(),
        message: Some("x".repeat(100_000)),
    });
    remote.job = Some(noisy);
    case.remote = Some(remote);
    let status = last_status(&case.decide());
    let failed = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Failed")
        .unwrap();
    assert!(failed.message.len() < 2_600, "{}", failed.message.len());
}

#[test]
fn lost_job_fails_the_attempt() {
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    let mut case = Case::new(&ws);
    case.remote = Some(prepared(1));
    let decision = case.decide();
    assert_eq!(steps(&decision)[0], "write-status");
    assert!(
        !steps(&decision).contains(&"create-job"),
        "never a second Job"
    );
    let status = last_status(&decision);
    assert_eq!(status.job_result, Some(JobResult::Failed));
    assert_eq!(condition(&status, "Failed").1, "JobLost");
}

#[test]
fn foreign_job_is_refused() {
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    let mut remote = prepared(1);
    let mut theirs = job(1, JobOutcome::Running, true);
    theirs.object = object("other-job", OTHER_UID, "a1", "p9");
    remote.job = Some(theirs);
    case.remote = Some(remote);
    let decision = case.decide();
    let status = last_status(&decision);
    assert_eq!(status.job_result, Some(JobResult::Rejected));
    assert_eq!(condition(&status, "Failed").1, "JobConflict");
    assert!(
        !steps(&decision).contains(&"release-job"),
        "someone else's Job is never touched"
    );
}

#[test]
fn retry_starts_exactly_one_new_attempt() {
    let mut done = bound(1, Some("job-uid"));
    done.job_result = Some(JobResult::Failed);
    done.cleaned_up = true;
    done.attempts = vec![crate::api::AttemptRecord {
        attempt: 1,
        attempt_id: "a1".into(),
        version: "0.1.0".into(),
        owner: "alice".into(),
        job: plan(1).job,
        result: Some(JobResult::Failed),
        finished_at: Some(Time(now())),
        message: None,
        cause: None,
        restores: None,
        kept: None,
    }];
    let ws = workspace(Some(plan(2)), Some(done));
    let mut case = Case::new(&ws);
    // The namespace stays from attempt 1; attempt 2's objects do not exist yet.
    case.remote = Some(Remote {
        namespace: Some(namespace_of(UID)),
        ..Default::default()
    });
    let decision = case.decide();
    let status = last_status(&decision);
    assert_eq!(status.attempt, Some(2));
    assert_eq!(status.job_result, None);
    assert_eq!(status.attempts.len(), 2);
    let jobs: Vec<_> = decision
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Create(o) => match &**o {
                EdgeObject::Job(job) => job.metadata.name.clone(),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(jobs, [plan(2).job]);
}

#[test]
fn older_attempt_finishes_first() {
    let mut old = bound(1, Some("job-uid"));
    old.job_result = Some(JobResult::Failed);
    let ws = workspace(Some(plan(2)), Some(old));
    let mut case = Case::new(&ws);
    let mut remote = prepared(1);
    remote.job = Some(job(1, failed(), true));
    case.remote = Some(remote);
    let decision = case.decide();
    assert!(!events(&decision).contains(&"AttemptStarted"));
    assert!(!steps(&decision).contains(&"create-job"));
    assert!(steps(&decision).contains(&"delete-service-account"));
    // While attempt 1's Job runs, attempt 2 waits for it.
    let running = bound(1, Some("job-uid"));
    let ws = workspace(Some(plan(2)), Some(running));
    let mut case = Case::new(&ws);
    let mut remote = prepared(1);
    remote.job = Some(job(1, JobOutcome::Running, true));
    case.remote = Some(remote);
    let decision = case.decide();
    assert_eq!(edge_actions(&decision), 0);
    assert_eq!(
        condition(&last_status(&decision), "Progressing").1,
        "WaitingForPreviousAttempt"
    );
}

#[test]
fn unstarted_attempt_is_superseded() {
    let ws = workspace(Some(plan(2)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.remote = Some(prepared(1));
    let decision = case.decide();
    let status = last_status(&decision);
    assert_eq!(status.attempt, Some(1));
    assert_eq!(status.job_result, Some(JobResult::Rejected));
    assert_eq!(condition(&status, "Failed").1, "Superseded");
    assert!(steps(&decision).contains(&"delete-service-account"));
}

#[test]
fn replayed_plan_is_refused() {
    let mut newer = bound(2, Some("job-uid"));
    newer.job_result = Some(JobResult::Succeeded);
    newer.cleaned_up = true;
    let ws = workspace(Some(plan(1)), Some(newer));
    let decision = Case::new(&ws).decide();
    assert_eq!(edge_actions(&decision), 0);
    let status = last_status(&decision);
    assert_eq!(status.attempt, Some(2), "the recorded attempt is kept");
    assert_eq!(status.job_result, Some(JobResult::Succeeded));
    assert_eq!(
        condition(&status, "Failed"),
        ("True".into(), "SealInvalid".into())
    );
}

#[test]
fn seal_is_checked_before_creating() {
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.seal = SealCheck::Invalid("signature mismatch".into());
    case.remote = Some(prepared(1));
    let decision = case.decide();
    assert!(!steps(&decision).contains(&"create-job"));
    assert!(
        steps(&decision).contains(&"delete-service-account"),
        "the preparation is removed"
    );
    assert_eq!(last_status(&decision).job_result, Some(JobResult::Rejected));
}

#[test]
fn expired_preparation_is_redone() {
    let mut status = bound(1, None);
    status.preparation = Some(Preparation {
        preparation_id: "p1".into(),
        preparation_expires_at: Time(now().checked_sub(jiff_secs(1)).unwrap()),
    });
    let ws = workspace(Some(plan(1)), Some(status));
    let mut case = Case::new(&ws);
    let mut remote = prepared(1);
    remote.role = None;
    case.remote = Some(remote);
    let decision = case.decide();
    assert_eq!(
        steps(&decision),
        [
            "write-status",
            "delete-service-account",
            "delete-role-binding",
            "delete-values-secret"
        ]
    );
    assert!(events(&decision).contains(&"PreparationExpired"));
    let status = last_status(&decision);
    let preparation = status.preparation.unwrap();
    assert_ne!(preparation.preparation_id, "p1");
    assert!(preparation.preparation_expires_at.0 > now());
    assert_eq!(decision.next, Next::Continue);
}

#[test]
fn target_mismatch_is_refused() {
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Ready(EdgeRoute {
        cluster: "cluster-2".into(),
        workspace_uuid: "ews-1".into(),
        server: "https://edge".into(),
    });
    case.remote = Some(prepared(1));
    let decision = case.decide();
    assert!(!steps(&decision).contains(&"create-job"));
    assert_eq!(
        condition(&last_status(&decision), "Failed").1,
        "TargetMismatch"
    );
}

#[test]
fn pending_release_is_recovered() {
    let ws = workspace(Some(plan(2)), Some(bound(2, None)));
    let mut case = Case::new(&ws);
    let mut remote = prepared(2);
    remote.release = Some(ReleaseRevision {
        modified: None,
        secret: "sh.helm.release.v1.hello.v1".into(),
        uid: "rel-uid".into(),
        revision: 1,
        status: "pending-install".into(),
        created: None,
    });
    case.remote = Some(remote.clone());
    let decision = case.decide();
    assert_eq!(edge_steps(&decision), ["mark-release-failed", "create-job"]);
    assert!(events(&decision).contains(&"ReleaseRecovered"));
    remote.release.as_mut().unwrap().status = "failed".into();
    case.remote = Some(remote);
    assert_eq!(
        edge_steps(&case.decide()),
        ["create-job"],
        "a failed release is left to Helm"
    );
}

#[test]
fn runtime_credential_is_minted_once() {
    let mut with_credential = plan(1);
    with_credential.runtime_credential = Some(RuntimeCredential {
        role: "provider-runtime".into(),
        value_path: "hub.secret".into(),
    });
    let ws = workspace(Some(with_credential), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.remote = Some(prepared(1));
    case.hub = Some(HubObjects::default());
    let decision = case.decide();
    assert_eq!(
        steps(&decision),
        [
            "create-hub-service-account",
            "create-hub-role-binding",
            "write-status",
            "mint-runtime-credential",
            "create-job"
        ]
    );
    assert_eq!(
        last_status(&decision).runtime_credential_secret.as_deref(),
        Some("demo-hub-credential")
    );
    let mut mine = object("x", UID, "", "");
    mine.owner_uids = vec![UID.into()];
    case.hub = Some(HubObjects {
        service_account: Some(mine.clone()),
        role_binding: Some(mine.clone()),
        role_binding_role: Some("provider-runtime".into()),
    });
    let mut remote = prepared(1);
    remote.runtime_credential = Some(mine);
    case.remote = Some(remote.clone());
    assert_eq!(
        edge_steps(&case.decide()),
        ["create-job"],
        "present: not minted again"
    );
}

#[test]
fn runtime_credential_is_owned_by_uid() {
    let mut with_credential = plan(1);
    with_credential.runtime_credential = Some(RuntimeCredential {
        role: "provider-runtime".into(),
        value_path: "hub.secret".into(),
    });
    let ws = workspace(Some(with_credential), Some(bound(1, None)));
    let mut mine = object("x", UID, "", "");
    mine.owner_uids = vec![UID.into()];
    // The annotation alone, which anyone in the namespace can write, is not ownership.
    let mut annotated = object("forged", OTHER_UID, "", "");
    annotated.owner_uids = vec![OTHER_UID.into()];
    // Our label without our owner reference is not ours either.
    let labelled_only = object("labelled", UID, "", "");
    let cases: [(&str, HubObjects, Option<ObjectState>, &[&str]); 4] = [
        (
            "a ServiceAccount of someone else",
            HubObjects {
                service_account: Some(annotated.clone()),
                role_binding: Some(mine.clone()),
                role_binding_role: Some("provider-runtime".into()),
            },
            Some(mine.clone()),
            &["delete-hub-service-account"],
        ),
        (
            "a RoleBinding labelled but not owned",
            HubObjects {
                service_account: Some(mine.clone()),
                role_binding: Some(labelled_only.clone()),
                role_binding_role: Some("provider-runtime".into()),
            },
            Some(mine.clone()),
            &["delete-hub-role-binding"],
        ),
        (
            "a RoleBinding of ours to another Role",
            HubObjects {
                service_account: Some(mine.clone()),
                role_binding: Some(mine.clone()),
                role_binding_role: Some("admin".into()),
            },
            Some(mine.clone()),
            &["delete-hub-role-binding"],
        ),
        (
            "an edge Secret of another Workspace",
            HubObjects {
                service_account: Some(mine.clone()),
                role_binding: Some(mine.clone()),
                role_binding_role: Some("provider-runtime".into()),
            },
            Some(annotated.clone()),
            &["delete-values-secret"],
        ),
    ];
    for (what, hub, secret, expected) in cases {
        let mut case = Case::new(&ws);
        let mut remote = prepared(1);
        remote.runtime_credential = secret;
        case.remote = Some(remote);
        case.hub = Some(hub);
        let decision = case.decide();
        assert_eq!(edge_steps(&decision), expected, "{what}");
        assert!(
            events(&decision).contains(&"RuntimeCredentialReplaced"),
            "{what}"
        );
        assert_eq!(decision.next, Next::Continue, "{what}");
    }
    // Once replaced, ours are created and minted.
    let mut case = Case::new(&ws);
    case.remote = Some(prepared(1));
    case.hub = Some(HubObjects::default());
    let created = case.decide();
    let hub_objects: Vec<&Action> = created
        .actions
        .iter()
        .filter(|a| {
            matches!(
                a,
                Action::CreateHubServiceAccount(_) | Action::CreateHubRoleBinding(_)
            )
        })
        .collect();
    for action in hub_objects {
        let meta = match action {
            Action::CreateHubServiceAccount(sa) => &sa.metadata,
            Action::CreateHubRoleBinding(rb) => &rb.metadata,
            _ => unreachable!(),
        };
        let owner = &meta.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("Workspace", UID)
        );
        assert_eq!(
            meta.labels.as_ref().unwrap()[names::LABEL_WORKSPACE_UID],
            UID
        );
    }
}

#[test]
fn authorization_is_asked_again_before_start() {
    let mut unprepared = bound(1, None);
    unprepared.preparation = None;
    let ws = workspace(Some(plan(1)), Some(unprepared));
    let mut case = Case::new(&ws);
    case.authorization = Authorization::Denied("alice may no longer install onto edge-1".into());
    let decision = case.decide();
    let status = last_status(&decision);
    assert_eq!(status.job_result, Some(JobResult::Rejected));
    assert_eq!(condition(&status, "Failed").1, "NotAuthorized");
    assert!(
        !edge_steps(&decision)
            .iter()
            .any(|s| s.starts_with("create")),
        "{:?}",
        edge_steps(&decision)
    );
    assert!(status.preparation.is_none(), "no preparation is recorded");

    case.authorization = Authorization::Unavailable("timeout".into());
    let decision = case.decide();
    assert_eq!(decision.next, Next::After(10));
    assert!(edge_steps(&decision).is_empty());
    assert_eq!(
        condition(&last_status(&decision), "Ready").1,
        "AuthorizationUnavailable"
    );

    case.authorization = Authorization::NotAsked;
    let decision = case.decide();
    assert_eq!(decision.next, Next::Continue);
    assert!(edge_steps(&decision).is_empty());

    // Asked once: a prepared attempt does not ask again.
    let mut prepared_status = bound(1, None);
    prepared_status.preparation = Some(Preparation {
        preparation_id: "p1".into(),
        preparation_expires_at: Time(
            now()
                .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(60))
                .unwrap(),
        ),
    });
    let prepared_ws = workspace(Some(plan(1)), Some(prepared_status));
    assert!(!focus(&prepared_ws).unwrap().authorize);
    assert!(focus(&ws).unwrap().authorize);
}

#[test]
fn deletion_revokes_only_the_identity() {
    let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    let mut case = Case::new(&ws);
    let mut remote = prepared(1);
    remote.job = Some(job(1, JobOutcome::Running, true));
    remote.runtime_credential = Some(object("cred", UID, "", ""));
    case.remote = Some(remote);
    let decision = case.decide();
    assert_eq!(
        steps(&decision),
        [
            "write-status",
            "delete-service-account",
            "delete-role",
            "delete-role-binding",
            "delete-values-secret",
            "release-job",
            "delete-job",
            "release-namespace",
            "remove-finalizer"
        ]
    );
    let status = last_status(&decision);
    assert!(status.deleting, "fenced first");
    assert_eq!(status.phase, Some(Phase::Deleting));
}

#[test]
fn deletion_waits_for_a_reachable_edge() {
    let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Unreachable("connection refused".into());
    case.remote = None;
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status"]);
    assert_eq!(decision.next, Next::Backoff);
    assert!(last_status(&decision).deleting);
}

#[test]
fn deletion_with_nothing_prepared_finishes_without_the_edge() {
    // Bound, but the edge never became Ready: no preparation, no Job, no namespace seen.
    let mut status = bound(1, None);
    status.preparation = None;
    status.namespace_uid = None;
    let mut ws = workspace(Some(plan(1)), Some(status));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    assert!(focus(&ws).is_none(), "nothing is read from the edge");
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Unreachable("connection refused".into());
    case.remote = None;
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status", "remove-finalizer"]);
    assert!(events(&decision).contains(&"NothingToClean"));
}

#[test]
fn deletion_abandoned_by_the_platform_finishes_without_the_edge() {
    let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    ws.metadata.annotations = Some(BTreeMap::from([(
        names::ANNOTATION_ABANDON.to_owned(),
        "edge-1 was decommissioned (ticket 42)".to_owned(),
    )]));
    assert!(focus(&ws).is_none(), "nothing is read from the edge");
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Unreachable("connection refused".into());
    case.remote = None;
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status", "remove-finalizer"]);
    let note = decision
        .actions
        .iter()
        .find_map(|a| match a {
            Action::Event(note) if note.reason == "Abandoned" => Some(note.message.clone()),
            _ => None,
        })
        .expect("an Abandoned Event");
    assert!(note.contains("ticket 42"), "{note}");
}

#[test]
fn deletion_of_an_unregistered_edge_goes_on() {
    let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    let mut case = Case::new(&ws);
    case.edge = EdgeState::Missing;
    case.remote = None;
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status", "remove-finalizer"]);
    assert!(events(&decision).contains(&"EdgeGone"));
}

#[test]
fn deletion_without_our_finalizer_writes_nothing() {
    let mut ws = workspace(Some(plan(1)), Some(bound(1, None)));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    ws.metadata.finalizers = None;
    assert!(Case::new(&ws).decide().actions.is_empty());
}

#[test]
fn another_workspaces_objects_are_never_touched() {
    // A same-name replacement (UID_1) sees what its deleted predecessor (UID_0) left.
    let theirs = Remote {
        namespace: Some(namespace_of(OTHER_UID)),
        service_account: Some(object("sa", OTHER_UID, "a1", "p1")),
        role: Some(object("role", OTHER_UID, "a1", "p1")),
        role_binding: Some(object("rb", OTHER_UID, "a1", "p1")),
        values: Some(object("values", OTHER_UID, "a1", "p1")),
        job: Some(JobState {
            object: object("job", OTHER_UID, "a1", "p1"),
            outcome: JobOutcome::Running,
            finished_at: None,
            runner: None,
        }),
        ..Default::default()
    };
    let mut ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    ws.metadata.deletion_timestamp = Some(Time(now()));
    let mut case = Case::new(&ws);
    case.remote = Some(theirs.clone());
    let decision = case.decide();
    assert_eq!(steps(&decision), ["write-status", "remove-finalizer"]);

    let mut result = bound(1, Some("job-uid"));
    result.job_result = Some(JobResult::Succeeded);
    let ws = workspace(Some(plan(1)), Some(result));
    let mut case = Case::new(&ws);
    case.remote = Some(theirs);
    let decision = case.decide();
    assert_eq!(
        edge_actions(&decision),
        0,
        "cleanup touches only this Workspace's objects"
    );
}

#[test]
fn settled_workspace_needs_only_its_release_from_the_edge_cache() {
    let mut done = bound(1, Some("job-uid"));
    done.job_result = Some(JobResult::Succeeded);
    done.cleaned_up = true;
    let ws = workspace(Some(plan(1)), Some(done.clone()));
    let installed = focus(&ws).expect("an installed release is watched for drift");
    assert!(installed.installed && !installed.authorize && installed.credential.is_none());
    assert_eq!(installed.release.as_deref(), Some("hello"));
    done.job_result = Some(JobResult::Failed);
    assert_eq!(
        focus(&workspace(Some(plan(1)), Some(done))),
        None,
        "a failed attempt needs nothing"
    );
    let mut case = Case::new(&ws);
    case.remote = None;
    case.edge = EdgeState::Unreachable("down".into());
    let first = case.decide();
    let settled = Workspace {
        status: Some(last_status(&first)),
        ..ws.clone()
    };
    let mut case = Case::new(&settled);
    case.remote = None;
    assert!(
        case.decide().actions.is_empty(),
        "a settled Workspace writes nothing"
    );
}

#[test]
fn focus_reads_what_the_step_needs() {
    let ws = workspace(Some(plan(2)), Some(bound(2, None)));
    let f = focus(&ws).unwrap();
    assert_eq!(f.names.job, plan(2).job);
    assert_eq!(
        f.release.as_deref(),
        Some("hello"),
        "preparing: read Helm's records"
    );
    let mut old = bound(1, Some("j"));
    old.job_result = Some(JobResult::Failed);
    let ws = workspace(Some(plan(2)), Some(old));
    let f = focus(&ws).unwrap();
    assert_eq!(f.attempt, 1, "the unfinished older attempt first");
    assert_eq!(f.release, None);
    assert!(
        !f.job_first,
        "a result is recorded: cleanup reads everything"
    );
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    assert!(
        focus(&ws).unwrap().job_first,
        "a running Job is all a decision needs"
    );
}

#[test]
fn running_job_needs_nothing_else() {
    // The shell reads only the Job while it runs; the decision must not need more.
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    let mut case = Case::new(&ws);
    case.remote = Some(Remote {
        job: Some(job(1, JobOutcome::Running, true)),
        ..Default::default()
    });
    let decision = case.decide();
    assert_eq!(edge_actions(&decision), 0);
    assert_eq!(decision.next, Next::After(300));
}

#[test]
fn a_definite_no_on_the_edge_or_the_recipe_decides_the_owner_s_authorization() {
    let plan = plan(1);
    let no = || Ok(false);
    let yes = || Ok(true);
    let unanswered = || Err("timeout".to_owned());
    let denied =
        |a: Authorization, what: &str| matches!(&a, Authorization::Denied(m) if m.contains(what));
    assert!(denied(
        Authorization::of_owner(&plan, no(), unanswered()),
        "install onto edge"
    ));
    assert!(denied(
        Authorization::of_owner(&plan, unanswered(), no()),
        "use recipe"
    ));
    assert!(denied(
        Authorization::of_owner(&plan, yes(), no()),
        "`use` verb on recipes/"
    ));
    assert_eq!(
        Authorization::of_owner(&plan, yes(), unanswered()),
        Authorization::Unavailable("timeout".into())
    );
    assert_eq!(
        Authorization::of_owner(&plan, yes(), yes()),
        Authorization::Allowed
    );
}
