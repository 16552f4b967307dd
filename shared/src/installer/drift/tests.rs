//! Rule `installed_release_is_checked_for_drift`, case by case.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

use super::{ReleaseContent, first_difference, reason};
use crate::{
    api::{InstalledRelease, JobResult, Workspace, WorkspaceStatus},
    installer::{
        EdgeObjects, Next, ReleaseRevision,
        conditions::{DRIFTED, FAILED, READY, STALLED},
        tests::{Case, bound, condition, events, last_status, now, plan, workspace},
    },
};

fn revision(revision: i64, uid: &str, status: &str) -> ReleaseRevision {
    ReleaseRevision {
        secret: format!("sh.helm.release.v1.hello.v{revision}"),
        uid: uid.into(),
        revision,
        status: status.into(),
        created: Some(Time(now())),
        modified: None,
    }
}

/// Attempt 1, succeeded and cleaned up, having left `left` (when recorded).
fn installed(left: Option<InstalledRelease>) -> Workspace {
    let mut status = bound(1, Some("job-uid"));
    status.job_result = Some(JobResult::Succeeded);
    status.finished_at = Some(Time(now()));
    status.cleaned_up = true;
    status.release = left;
    workspace(Some(plan(1)), Some(status))
}

fn left(revision: i64, uid: &str) -> Option<InstalledRelease> {
    Some(InstalledRelease {
        name: "hello".into(),
        revision,
        record_uid: uid.into(),
        content_baseline: None,
    })
}

fn check(
    ws: &Workspace,
    newest: Option<ReleaseRevision>,
    content: Option<ReleaseContent>,
) -> (WorkspaceStatus, Vec<&'static str>, Next) {
    let mut case = Case::new(ws);
    case.edge_objects = Some(EdgeObjects {
        release: newest,
        release_content: content,
        ..EdgeObjects::default()
    });
    let decision = case.decide();
    let status = if decision.actions.iter().any(|a| a.name() == "write-status") {
        last_status(&decision)
    } else {
        ws.status.clone().unwrap()
    };
    (status, events(&decision), decision.next)
}

#[test]
fn the_revision_an_attempt_left_is_recorded_once_and_then_in_sync() {
    let ws = installed(None);
    let (status, events, next) = check(&ws, Some(revision(1, "r1", "deployed")), None);
    assert_eq!(status.release, left(1, "r1"));
    assert!(events.is_empty());
    assert!(
        matches!(next, Next::After(s) if (300..=331).contains(&s)),
        "{next:?}"
    );
    assert_eq!(
        condition(&status, DRIFTED),
        ("False".into(), reason::IN_SYNC.into())
    );
    assert_eq!(condition(&status, READY).0, "True");
    // Unchanged: nothing to write.
    let settled = Workspace {
        status: Some(status),
        ..ws
    };
    let mut case = Case::new(&settled);
    case.edge_objects = Some(EdgeObjects {
        release: Some(revision(1, "r1", "deployed")),
        ..EdgeObjects::default()
    });
    assert!(
        case.decide().actions.is_empty(),
        "an unchanged release writes nothing"
    );
}

#[test]
fn an_uninstalled_release_is_missing() {
    let (status, events, _) = check(&installed(left(1, "r1")), None, None);
    let drift = status.drift.clone().unwrap();
    assert_eq!(drift.reason, reason::RELEASE_MISSING);
    assert!(
        drift.message.contains("uninstalled outside the installer"),
        "{}",
        drift.message
    );
    assert!(
        drift.message.contains("kubectl provider repair demo"),
        "{}",
        drift.message
    );
    assert_eq!(events, vec!["ReleaseDrifted"]);
    assert_eq!(
        condition(&status, READY),
        ("False".into(), reason::RELEASE_MISSING.into())
    );
    assert_eq!(condition(&status, STALLED).0, "True");
    assert_eq!(condition(&status, DRIFTED).0, "True");
    assert_eq!(
        condition(&status, FAILED).0,
        "False",
        "the attempt did not fail"
    );
}

#[test]
fn a_newer_revision_is_described_by_what_it_installs() {
    let content = ReleaseContent {
        chart: "hello".into(),
        version: "0.2.0".into(),
        values: json!({"greeting": "hello"}),
    };
    let (status, events, _) = check(
        &installed(left(1, "r1")),
        Some(revision(2, "r2", "deployed")),
        Some(content),
    );
    let drift = status.drift.unwrap();
    assert_eq!(drift.reason, reason::RELEASE_CHANGED);
    assert_eq!(
        (drift.revision, drift.record_uid.as_deref()),
        (Some(2), Some("r2"))
    );
    for words in [
        "revision 2 (deployed), made outside the installer after revision 1",
        "chart hello 0.2.0, the plan pins hello 0.1.0",
        "values differ from the plan's at greeting",
    ] {
        assert!(
            drift.message.contains(words),
            "{words:?} in {}",
            drift.message
        );
    }
    assert_eq!(events, vec!["ReleaseDrifted"]);
}

#[test]
fn drift_already_reported_is_not_reported_again() {
    let ws = installed(left(1, "r1"));
    let (status, _, _) = check(&ws, Some(revision(2, "r2", "deployed")), None);
    let again = Workspace {
        status: Some(status),
        ..ws
    };
    let mut case = Case::new(&again);
    case.edge_objects = Some(EdgeObjects {
        release: Some(revision(2, "r2", "deployed")),
        ..EdgeObjects::default()
    });
    let decision = case.decide();
    assert!(decision.actions.is_empty(), "{:?}", decision.actions);
}

#[test]
fn a_release_installed_again_outside_the_installer_is_replaced() {
    let (status, _, _) = check(
        &installed(left(2, "r2")),
        Some(revision(1, "other", "deployed")),
        None,
    );
    assert_eq!(status.drift.unwrap().reason, reason::RELEASE_REPLACED);
}

#[test]
fn a_release_never_seen_is_missing_only_once_the_watch_had_time() {
    let ws = installed(None);
    let (status, events, _) = check(&ws, None, None);
    assert_eq!(status.drift, None, "just completed: the watch may lag");
    assert!(events.is_empty());
    let mut long_ago = ws.clone();
    long_ago.status.as_mut().unwrap().finished_at = Some(Time(
        now() - k8s_openapi::jiff::SignedDuration::from_secs(600),
    ));
    let (status, _, _) = check(&long_ago, None, None);
    assert_eq!(status.drift.unwrap().reason, reason::RELEASE_MISSING);
}

#[test]
fn a_helm_at_work_is_waited_for_then_judged() {
    let ws = installed(left(1, "r1"));
    let (status, events, next) = check(&ws, Some(revision(2, "r2", "pending-upgrade")), None);
    assert_eq!(
        (status.drift, events.len(), next),
        (None, 0, Next::After(5))
    );
    let mut stuck = revision(2, "r2", "pending-upgrade");
    stuck.created = Some(Time(
        now() - k8s_openapi::jiff::SignedDuration::from_secs(3600),
    ));
    let (status, _, _) = check(&ws, Some(stuck), None);
    assert!(status.drift.unwrap().message.contains("(pending-upgrade)"));
    // A change time in the future is no helm at work.
    let mut forged = revision(2, "r2", "pending-upgrade");
    forged.modified = Some(now().as_second() + 86_400);
    let (status, _, _) = check(&ws, Some(forged), None);
    assert!(status.drift.is_some());
}

#[test]
fn an_edge_that_cannot_be_read_is_not_judged() {
    let ws = installed(left(1, "r1"));
    let (status, _, _) = check(&ws, Some(revision(1, "r1", "deployed")), None);
    let settled = Workspace {
        status: Some(status),
        ..ws
    };
    let mut case = Case::new(&settled);
    case.edge_objects = None;
    case.edge = crate::installer::EdgeState::Unreachable("down".into());
    let decision = case.decide();
    assert!(decision.actions.is_empty(), "{:?}", decision.actions);
    assert!(matches!(decision.next, Next::After(_)));
}

#[test]
fn a_revision_made_after_the_job_is_not_taken_for_the_attempts_own() {
    let mut later = revision(2, "r2", "deployed");
    later.created = Some(Time(
        now() + k8s_openapi::jiff::SignedDuration::from_secs(600),
    ));
    let (status, _, _) = check(&installed(None), Some(later), None);
    assert_eq!(status.release, None);
    assert_eq!(status.drift.unwrap().reason, reason::RELEASE_CHANGED);
}

#[test]
fn values_are_compared_by_value_not_by_number_type() {
    assert_eq!(
        first_difference(&json!({"a": 1.0}), &json!({"a": 1}), ""),
        None
    );
    assert_eq!(
        first_difference(&json!({"a": {"b": 2}}), &json!({"a": {"b": 3}}), ""),
        Some(".a.b".into())
    );
    assert_eq!(
        first_difference(&json!({}), &json!({"c": 1}), ""),
        Some(".c".into())
    );
}

mod objects {
    use super::*;
    use crate::installer::{
        ObjectSeen, ReleaseObjects,
        drift::edit_order::EditVersions,
        release_objects::{FieldEdit, ObjectTrace, ReleaseObject},
    };
    use k8s_openapi::jiff::SignedDuration;

    fn greeting() -> ReleaseObject {
        ReleaseObject {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "hello".into(),
            name: "hello-greeting".into(),
        }
    }

    fn edited(manager: &str, after_finish: i64) -> ObjectSeen {
        ObjectSeen::Present(ObjectTrace {
            uid: "cm1".into(),
            version: None,
            opted_out: false,
            edits: vec![FieldEdit {
                manager: manager.into(),
                operation: "Update".into(),
                time: Some(now() + SignedDuration::from_secs(after_finish)),
                fields: vec!["data.greeting".into()],
                more_fields: false,
                versions: Default::default(),
            }],
        })
    }

    fn check_objects(ws: &Workspace, seen: ObjectSeen) -> (WorkspaceStatus, Vec<&'static str>) {
        let mut case = Case::new(ws);
        case.edge_objects = Some(EdgeObjects {
            release: Some(revision(1, "r1", "deployed")),
            objects: Some(ReleaseObjects {
                record_uid: "r1".into(),
                objects: vec![(greeting(), seen)],
            }),
            ..EdgeObjects::default()
        });
        let decision = case.decide();
        let status = if decision.actions.iter().any(|a| a.name() == "write-status") {
            last_status(&decision)
        } else {
            ws.status.clone().unwrap()
        };
        (status, events(&decision))
    }

    #[test]
    fn an_edit_by_another_manager_after_the_attempt_is_drift_naming_object_manager_and_fields() {
        let ws = installed(left(1, "r1"));
        let (status, events) = check_objects(&ws, edited("kubectl-patch", 2));
        let drift = status.drift.clone().expect("drift");
        assert_eq!(drift.reason, reason::OBJECT_CHANGED);
        assert!(
            drift.message.contains("ConfigMap hello/hello-greeting")
                && drift.message.contains("kubectl-patch")
                && drift.message.contains("data.greeting")
                && drift.message.contains("kubectl provider repair"),
            "{}",
            drift.message
        );
        assert_eq!(drift.objects.len(), 1);
        assert_eq!(drift.objects[0].manager.as_deref(), Some("kubectl-patch"));
        assert_eq!(drift.objects[0].fields, ["data.greeting"]);
        assert_eq!(events, ["ReleaseDrifted"]);
        assert_eq!(condition(&status, DRIFTED).0, "True");
        assert_eq!(condition(&status, READY).0, "False");
        // The same drift found again: no new Event, nothing written.
        let again = Workspace {
            status: Some(status),
            ..ws
        };
        let (_, events) = check_objects(&again, edited("kubectl-patch", 2));
        assert!(events.is_empty());
        // Edited again later: a new drift, a new Event.
        let (_, events) = check_objects(&again, edited("kubectl-edit", 120));
        assert_eq!(events, ["ReleaseDrifted"]);
    }

    /// An edit `after_finish` seconds after the Job's end, seen first in the object's
    /// version `first_seen`, absent in `absent_in`.
    fn edited_in(
        manager: &str,
        after_finish: i64,
        first_seen: Option<u64>,
        absent_in: Option<u64>,
    ) -> ObjectSeen {
        let ObjectSeen::Present(mut trace) = edited(manager, after_finish) else {
            unreachable!("edited is present")
        };
        trace.edits[0].versions = EditVersions {
            first_seen,
            absent_in,
        };
        ObjectSeen::Present(trace)
    }

    /// Installed by a Job whose end was seen at the edge's version 100.
    fn installed_at_version_100() -> Workspace {
        let mut ws = installed(left(1, "r1"));
        if let Some(status) = ws.status.as_mut() {
            status.finished_resource_version = Some("100".into());
        }
        ws
    }

    #[test]
    fn writes_up_to_the_attempt_s_end_are_the_release_s_own() {
        let ws = installed_at_version_100();
        // Up to the Job's completion (a controller annotating what helm made), in the same
        // second too: seen in a version before the Job's end.
        for seconds in [-1, 0] {
            let (status, _) = check_objects(
                &ws,
                edited_in("kube-controller-manager", seconds, Some(95), Some(90)),
            );
            assert!(status.drift.is_none(), "{seconds}");
        }
        let (status, _) = check_objects(&ws, edited("kube-controller-manager", -1));
        assert!(status.drift.is_none(), "unordered, a second before");
        let (status, _) = check_objects(&ws, edited("kubectl-patch", 1));
        assert!(status.drift.is_some(), "after the attempt finished: drift");
    }

    #[test]
    fn an_edit_in_the_second_the_attempt_ended_is_drift_when_written_after_it() {
        let ws = installed_at_version_100();
        // The watch saw version 100 without it and 104 with it: written after the Job's end.
        let (status, events) =
            check_objects(&ws, edited_in("kubectl-patch", 0, Some(104), Some(100)));
        let drift = status.drift.expect("an edit after the end, in its second");
        assert_eq!(drift.objects[0].manager.as_deref(), Some("kubectl-patch"));
        assert_eq!(events, ["ReleaseDrifted"]);
        // Seen only in a list after the end, in the same second: it cannot be ordered, and
        // is named rather than assumed the release's own.
        let (status, _) = check_objects(&ws, edited_in("kubectl-patch", 0, Some(130), None));
        assert!(status.drift.is_some(), "unordered, the same second");
    }

    #[test]
    fn a_deleted_object_is_drift() {
        let ws = installed(left(1, "r1"));
        let (status, _) = check_objects(&ws, ObjectSeen::Missing);
        let drift = status.drift.expect("drift");
        assert_eq!(drift.reason, reason::OBJECT_DELETED);
        assert!(drift.message.contains("is gone"), "{}", drift.message);
    }

    #[test]
    fn an_opted_out_or_unfollowed_object_is_not_judged() {
        let ws = installed(left(1, "r1"));
        let mut opted = edited("kubectl-edit", 120);
        if let ObjectSeen::Present(trace) = &mut opted {
            trace.opted_out = true;
        }
        assert!(check_objects(&ws, opted).0.drift.is_none());
        assert!(check_objects(&ws, ObjectSeen::Unknown).0.drift.is_none());
    }

    #[test]
    fn objects_of_another_revision_are_not_judged() {
        let ws = installed(left(1, "r1"));
        let mut case = Case::new(&ws);
        case.edge_objects = Some(EdgeObjects {
            release: Some(revision(1, "r1", "deployed")),
            objects: Some(ReleaseObjects {
                record_uid: "r0".into(),
                objects: vec![(greeting(), ObjectSeen::Missing)],
            }),
            ..EdgeObjects::default()
        });
        let decision = case.decide();
        assert!(events(&decision).is_empty());
        if decision.actions.iter().any(|a| a.name() == "write-status") {
            assert!(last_status(&decision).drift.is_none());
        }
    }

    #[test]
    fn managers_and_fields_the_recipe_expects_are_not_drift() {
        let mut ws = installed(left(1, "r1"));
        ws.spec.plan.as_mut().unwrap().plan.drift = Some(crate::api::DriftPolicy {
            ignore_managers: vec!["kube-controller-manager".into()],
            ignore_fields: vec![crate::api::IgnoredFields {
                kind: "ConfigMap".into(),
                paths: vec!["data.greeting".into()],
            }],
            ..Default::default()
        });
        assert!(
            check_objects(&ws, edited("kube-controller-manager", 60))
                .0
                .drift
                .is_none()
        );
        assert!(
            check_objects(&ws, edited("kubectl-edit", 60))
                .0
                .drift
                .is_none(),
            "an edit of an ignored field only"
        );
        let mut other = edited("kubectl-edit", 60);
        if let ObjectSeen::Present(trace) = &mut other {
            trace.edits[0].fields.push("data.other".into());
        }
        let drift = check_objects(&ws, other).0.drift.expect("drift");
        assert_eq!(drift.objects[0].fields, ["data.other"]);
        // An edit of more fields than the trace names is drift even if those named are
        // ignored: the others may not be.
        let mut many = edited("kubectl-edit", 60);
        if let ObjectSeen::Present(trace) = &mut many {
            trace.edits[0].more_fields = true;
        }
        assert!(check_objects(&ws, many).0.drift.is_some());
    }

    mod automatic_repair {
        use super::*;
        use crate::{
            api::{AutomaticRepairState, Cause, DriftPolicy, Repair},
            installer::{
                Action, Decision,
                drift::{REPAIR_LOOP, REQUEST_AGAIN_SECONDS},
            },
        };

        /// Installed under `repair: Automatic` by `cause`, the attempt having ended
        /// `ended_ago` seconds before the check.
        fn repairing(cause: Cause, ended_ago: i64) -> Workspace {
            let mut ws = installed(left(1, "r1"));
            let plan = &mut ws.spec.plan.as_mut().unwrap().plan;
            plan.cause = Some(cause);
            plan.drift = Some(DriftPolicy {
                repair: Some(Repair::Automatic),
                repair_quiet_period_seconds: Some(600),
                ..Default::default()
            });
            ws.status.as_mut().unwrap().finished_at =
                Some(Time(now() - SignedDuration::from_secs(ended_ago)));
            ws
        }

        fn decide(ws: &Workspace) -> Decision {
            let mut case = Case::new(ws);
            case.edge_objects = Some(EdgeObjects {
                release: Some(revision(1, "r1", "deployed")),
                objects: Some(ReleaseObjects {
                    record_uid: "r1".into(),
                    objects: vec![(greeting(), edited("kubectl-edit", 1))],
                }),
                ..EdgeObjects::default()
            });
            case.decide()
        }

        /// What the installer did about the drift in `status` on its own.
        fn repair_state(status: &WorkspaceStatus) -> AutomaticRepairState {
            let drift = status.drift.as_ref().expect("drift");
            drift.automatic_repair.as_ref().expect("an answer").state
        }

        fn names(decision: &Decision) -> Vec<&'static str> {
            decision.actions.iter().map(Action::name).collect()
        }

        #[test]
        fn drift_asks_for_a_repair_once_written_down() {
            let ws = repairing(Cause::Create, 3_600);
            let decision = decide(&ws);
            // The drift and the request are recorded before the request is made.
            assert_eq!(
                names(&decision),
                ["event", "event", "write-status", "request-repair"]
            );
            assert_eq!(
                events(&decision),
                ["ReleaseDrifted", "AutomaticRepairRequested"]
            );
            let Some(Action::RequestRepair(request)) = decision.actions.last() else {
                panic!("a request")
            };
            let plan = &ws.spec.plan.as_ref().unwrap().plan;
            assert_eq!(
                (request.attempt, request.attempt_id.as_str(), request.retry),
                (1, plan.attempt_id.as_str(), 0)
            );
            let status = last_status(&decision);
            assert_eq!(repair_state(&status), AutomaticRepairState::Requested);
            // Asked already: not again until REQUEST_AGAIN_SECONDS have passed.
            let again = Workspace {
                status: Some(status.clone()),
                ..ws.clone()
            };
            assert!(!names(&decide(&again)).contains(&"request-repair"));
            let mut later = again.clone();
            later
                .status
                .as_mut()
                .unwrap()
                .drift
                .as_mut()
                .unwrap()
                .automatic_repair = Some(crate::api::AutomaticRepair {
                state: AutomaticRepairState::Requested,
                at: Time(now() - SignedDuration::from_secs(REQUEST_AGAIN_SECONDS)),
            });
            assert!(names(&decide(&later)).contains(&"request-repair"));
        }

        #[test]
        fn drift_soon_after_an_automatic_repair_stops_it_and_says_so() {
            // Drift 100 s after an automatic repair ended, within the 600 s quiet period.
            let ws = repairing(Cause::AutomaticRepair, 100);
            let decision = decide(&ws);
            assert!(!names(&decision).contains(&"request-repair"));
            assert_eq!(
                events(&decision),
                ["ReleaseDrifted", "AutomaticRepairStopped"]
            );
            let status = last_status(&decision);
            assert_eq!(repair_state(&status), AutomaticRepairState::Stopped);
            let (stalled, why) = condition(&status, STALLED);
            assert_eq!((stalled.as_str(), why.as_str()), ("True", REPAIR_LOOP));
            let message = &status.condition(STALLED).unwrap().message;
            assert!(message.contains("kubectl provider repair"), "{message}");
            // It stays stopped, with no new Event.
            let again = Workspace {
                status: Some(status),
                ..ws
            };
            let decision = decide(&again);
            assert!(!names(&decision).contains(&"request-repair"));
            assert!(events(&decision).is_empty());
        }

        #[test]
        fn drift_long_after_an_automatic_repair_or_after_one_by_hand_is_repaired() {
            for ws in [
                repairing(Cause::AutomaticRepair, 700),
                repairing(Cause::Repair, 100),
            ] {
                assert!(names(&decide(&ws)).contains(&"request-repair"));
            }
        }

        #[test]
        fn a_recipe_that_repairs_by_hand_only_reports() {
            let mut ws = repairing(Cause::Create, 3_600);
            ws.spec.plan.as_mut().unwrap().plan.drift = None;
            let decision = decide(&ws);
            assert!(!names(&decision).contains(&"request-repair"));
            assert_eq!(events(&decision), ["ReleaseDrifted"]);
        }
    }
}

mod contents;
