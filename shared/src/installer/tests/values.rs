//! A plan's values are read by digest and checked before anything is created for it:
//! rule `values_are_checked_before_creating`.

use std::sync::Arc;

use super::*;
use crate::plan_values::{ValuesDefect, digest_of, object_name};

/// Attempt 1, its values stored apart under their digest.
fn stored_plan() -> (Plan, serde_json::Value) {
    let values = json!({"greeting": "from the values object"});
    let plan = Plan {
        values: None,
        values_digest: Some(digest_of(&values)),
        ..plan(1)
    };
    (plan, values)
}

fn message_of(status: &WorkspaceStatus, kind: &str) -> String {
    status.condition(kind).unwrap().message.clone()
}

fn verified(values: &serde_json::Value, owners: &[&str]) -> ValuesCheck {
    ValuesCheck::Verified {
        values: Arc::new(values.clone()),
        uid: "values-uid".into(),
        owners: owners.iter().map(|o| o.to_string()).collect(),
        labeled: true,
    }
}

#[test]
fn the_values_object_is_read_while_the_attempt_prepares() {
    let (plan, _) = stored_plan();
    let name = object_name("demo", plan.values_digest.as_deref().unwrap());
    let preparing = workspace(Some(plan.clone()), Some(bound(1, None)));
    assert_eq!(attempt_reads(&preparing).unwrap().values, Some(name));
    let running = workspace(Some(plan), Some(bound(1, Some("job-uid"))));
    assert_eq!(attempt_reads(&running).unwrap().values, None);
    // A plan that carries its values needs no read.
    let inline = workspace(Some(super::plan(1)), Some(bound(1, None)));
    assert_eq!(attempt_reads(&inline).unwrap().values, None);
}

#[test]
fn the_job_runs_the_values_the_digest_names_and_takes_them_into_ownership() {
    let (plan, values) = stored_plan();
    let ws = workspace(Some(plan), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(prepared(1));
    case.values = verified(&values, &[]);
    let decision = case.decide();
    assert_eq!(edge_steps(&decision), ["own-plan-values", "create-job"]);
    // Taken into ownership whatever the edge's state.
    let mut down = Case::new(&ws);
    down.edge = EdgeState::Unreachable("connection refused".into());
    down.values = verified(&values, &[]);
    assert!(steps(&down.decide()).contains(&"own-plan-values"));
    let own = decision
        .actions
        .iter()
        .find_map(|a| match a {
            Action::OwnPlanValues(own) => Some(own),
            _ => None,
        })
        .expect("the values are taken into the Workspace's ownership");
    assert_eq!(own.namespace, "org-a");
    let patch = serde_json::to_value(&own.patch).unwrap();
    assert_eq!(
        patch[0],
        json!({"op": "test", "path": "/metadata/uid", "value": "values-uid"})
    );
    assert_eq!(patch[1]["value"][0]["uid"], UID);
    assert_eq!(patch[1]["value"][0]["kind"], "Workspace");
    assert_eq!(
        patch[2],
        json!({"op": "add", "path": "/metadata/labels/providers.platform.dev~1adopted", "value": "true"})
    );
    let job = decision
        .actions
        .iter()
        .find_map(|a| match a {
            Action::Create(object) => match &**object {
                EdgeObject::Job(job) => Some(job.clone()),
                _ => None,
            },
            _ => None,
        })
        .unwrap();
    let annotations = job
        .spec
        .unwrap()
        .template
        .metadata
        .unwrap()
        .annotations
        .unwrap();
    assert_eq!(
        annotations[names::ANNOTATION_VALUES],
        r#"{"greeting":"from the values object"}"#
    );

    // Owned already: nothing more to write.
    case.values = verified(&values, &[UID]);
    let decision = case.decide();
    assert!(
        !steps(&decision).contains(&"own-plan-values"),
        "{:?}",
        steps(&decision)
    );
    assert_eq!(edge_steps(&decision), ["create-job"]);
}

#[test]
fn values_restored_with_a_lost_workspaces_owner_become_this_workspaces_alone() {
    let (plan, values) = stored_plan();
    let ws = workspace(Some(plan), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(prepared(1));
    case.values = verified(&values, &[OTHER_UID]);
    let decision = case.decide();
    let own = decision
        .actions
        .iter()
        .find_map(|a| match a {
            Action::OwnPlanValues(own) => Some(own),
            _ => None,
        })
        .expect("the values are taken into this Workspace's ownership");
    let patch = serde_json::to_value(&own.patch).unwrap();
    assert_eq!(patch[0]["op"], "test", "guarded by the object's UID");
    assert_eq!(
        (&patch[1]["op"], &patch[1]["path"]),
        (&json!("add"), &json!("/metadata/ownerReferences")),
        "the whole list is replaced, the lost owner's reference with it"
    );
    assert_eq!(patch[1]["value"].as_array().map(Vec::len), Some(1));
    assert_eq!(patch[1]["value"][0]["uid"], UID);
}

#[rstest]
#[case::missing(ValuesCheck::Missing { name: "demo-values-x".into() }, "is missing")]
#[case::changed(
    ValuesCheck::Defective {
        name: "demo-values-x".into(),
        defect: ValuesDefect::ContentChanged { sealed: "sha256:a".into(), actual: "sha256:b".into() },
    },
    "changed after the plan was sealed"
)]
fn values_missing_or_changed_reject_the_attempt_before_anything_is_created(
    #[case] values: ValuesCheck,
    #[case] says: &str,
) {
    let (plan, _) = stored_plan();
    let mut unprepared = bound(1, None);
    unprepared.preparation = None;
    let ws = workspace(Some(plan), Some(unprepared));
    let mut case = Case::new(&ws);
    case.values = values;
    let decision = case.decide();
    let status = last_status(&decision);
    assert_eq!(status.job_result, Some(JobResult::Rejected));
    assert_eq!(condition(&status, "Failed").1, "ValuesInvalid");
    let message = message_of(&status, "Failed");
    assert!(message.contains(says), "{message}");
    assert!(message.contains("Nothing was created"), "{message}");
    assert!(
        !edge_steps(&decision)
            .iter()
            .any(|s| s.starts_with("create")),
        "{:?}",
        edge_steps(&decision)
    );
    assert!(status.preparation.is_none(), "no preparation is recorded");
}

#[test]
fn values_that_cannot_be_read_are_asked_for_again() {
    let (plan, _) = stored_plan();
    let ws = workspace(Some(plan), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.values = ValuesCheck::Unavailable("connection refused".into());
    let decision = case.decide();
    assert_eq!(decision.next, Next::After(10));
    assert!(edge_steps(&decision).is_empty());
    let status = last_status(&decision);
    assert_eq!(condition(&status, "Ready").1, "ValuesUnavailable");
    let message = message_of(&status, "Ready");
    assert!(message.contains("connection refused"), "{message}");
}
