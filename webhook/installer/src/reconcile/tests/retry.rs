//! A retry after a failure: the failure recorded with the attempt's identity revoked, then
//! the retry the webhook sealed (attempt 2, bound to the Workspace's UID) prepares the
//! edge again and starts its own Job.

use super::*;

#[tokio::test]
async fn a_failed_attempt_is_recorded_and_its_retry_starts_a_new_job() {
    let mut world = World::new();
    let created = world.create_workspace(first_plan());
    world.reconcile().await.unwrap();
    world.job_ends("hello-1", false);
    world.watches_catch_up();
    world.requests();

    world.reconcile().await.unwrap();
    assert_eq!(
        world.requests(),
        [
            // The runner Pod, for helm's own words: none is left here. Read once: the
            // pass after the failure is recorded does not need it.
            "LIST edge pods/org-a-hello batch.kubernetes.io/job-name=hello-1",
            "POST hub events/org-a JobFailed",
            "PATCH hub workspaces/org-a/ws status",
            "DELETE edge serviceaccounts/org-a-hello/hello-1-runner",
            "DELETE edge roles/org-a-hello/hello-1-runner",
            "DELETE edge rolebindings/org-a-hello/hello-1-runner",
            "PATCH edge jobs/org-a-hello/hello-1",
            "PATCH hub workspaces/org-a/ws status",
        ]
    );
    assert_eq!(world.status().job_result, Some(JobResult::Failed));
    let (reason, message) = world.condition("Failed");
    assert_eq!(reason, "JobFailed");
    assert!(message.contains("BackoffLimitExceeded"), "{message}");

    // The tenant raises spec.retry; the webhook seals attempt 2 for this Workspace.
    let retry = Plan {
        attempt: 2,
        attempt_id: "a2".into(),
        retry: 1,
        job: "hello-2".into(),
        workspace: providers_shared::api::WorkspaceIdentity {
            uid: created.metadata.uid.clone().unwrap_or_default(),
            ..first_plan().workspace
        },
        ..first_plan()
    };
    let sealed = world.sealer.seal(retry).expect("the retry seals");
    world.hub.edit::<Workspace>(NAMESPACE, NAME, |ws| {
        ws.spec.retry = Some(1);
        ws.spec.plan = Some(sealed);
    });
    world.watches_catch_up();
    world.reconcile().await.unwrap();
    assert_eq!(
        world.requests(),
        [
            // The cached copy is not the version the installer's own last write left: it
            // reads the Workspace live rather than trust either.
            "GET hub workspaces/org-a/ws",
            "GET edge namespaces/org-a-hello",
            "POST hub subjectaccessreviews use recipes/hello",
            "POST hub subjectaccessreviews install edges/edge-1",
            "PATCH hub workspaces/org-a/ws status",
            "POST edge serviceaccounts/org-a-hello/hello-2-runner",
            "POST edge roles/org-a-hello/hello-2-runner",
            "POST edge rolebindings/org-a-hello/hello-2-runner",
            "POST edge jobs/org-a-hello/hello-2",
            "PATCH hub workspaces/org-a/ws status",
        ]
    );
    let status = world.status();
    assert_eq!(status.attempt, Some(2));
    assert_eq!(status.job.as_deref(), Some("hello-2"));
    assert_eq!(status.job_result, None, "the failure was attempt 1's");
    assert_eq!(
        status
            .attempts
            .iter()
            .map(|a| (a.attempt, a.result))
            .collect::<Vec<_>>(),
        [(1, Some(JobResult::Failed)), (2, None)]
    );
}
