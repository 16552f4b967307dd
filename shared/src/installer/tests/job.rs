//! The Job runs the pinned plan: created with its values, recorded while it runs, failed
//! when lost, refused when foreign, its failure told in Helm's words.

use super::*;

#[test]
fn job_is_created_with_the_pinned_plan() {
    let ws = workspace(Some(plan(1)), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(prepared(1));
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
    let mut edge_objects = prepared(1);
    edge_objects.values = None;
    case.edge_objects = Some(edge_objects.clone());
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
    large.values = Some(json!({"greeting": "x".repeat(names::VALUES_ANNOTATION_LIMIT)}));
    let ws = workspace(Some(large), Some(bound(1, None)));
    let mut case = Case::new(&ws);
    case.edge_objects = Some(edge_objects);
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
    let mut edge_objects = prepared(1);
    edge_objects.job = Some(job(1, JobOutcome::Running, true));
    case.edge_objects = Some(edge_objects);
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
fn a_failure_says_why_in_helms_words() {
    let ws = workspace(Some(plan(1)), Some(bound(1, Some("job-uid"))));
    let mut case = Case::new(&ws);
    let mut edge_objects = prepared(1);
    let mut failed_job = job(1, failed(), true);
    failed_job.runner = Some(RunnerPod {
        name: "hello-0a1b2c3d-1-x7k2p".into(),
        message: Some(
            "\u{1b}[1mError:\u{1b}[0m INSTALLATION FAILED: chart \"hello\" version \"9.9.9\" not found in http://127.0.0.1:1 repository\n".into(),
        ),
    });
    edge_objects.job = Some(failed_job);
    case.edge_objects = Some(edge_objects);
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
    let mut edge_objects = prepared(1);
    let mut noisy = job(1, failed(), true);
    noisy.runner = Some(RunnerPod {
        name: "p".into(),
        message: Some("x".repeat(100_000)),
    });
    edge_objects.job = Some(noisy);
    case.edge_objects = Some(edge_objects);
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
    case.edge_objects = Some(prepared(1));
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
    let mut edge_objects = prepared(1);
    let mut theirs = job(1, JobOutcome::Running, true);
    theirs.object = object("other-job", OTHER_UID, "a1", "p9");
    theirs
        .object
        .annotations
        .insert(names::ANNOTATION_WORKSPACE.into(), "org-b/demo".into());
    edge_objects.job = Some(theirs);
    case.edge_objects = Some(edge_objects);
    let decision = case.decide();
    let status = last_status(&decision);
    assert_eq!(status.job_result, Some(JobResult::Rejected));
    assert_eq!(condition(&status, "Failed").1, "JobConflict");
    assert!(
        !steps(&decision).contains(&"release-job"),
        "someone else's Job is never touched"
    );
}
