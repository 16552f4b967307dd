//! A sealed create: the runner's identity and the Job made on the edge in one reconcile;
//! the Job's success recorded, the identity revoked and the Job released once it ends.

use super::*;

#[tokio::test]
async fn a_sealed_create_prepares_the_edge_starts_the_job_and_records_its_success() {
    let mut world = World::new();
    world.create_workspace(first_plan());

    let requeue = world.reconcile().await.unwrap();
    assert_eq!(
        world.requests(),
        [
            // The first use of the edge for the attempt: its namespace read live, and RBAC
            // asked again as the plan's owner.
            "GET edge namespaces/org-a-hello -> 404",
            "POST hub subjectaccessreviews use recipes/hello",
            "POST hub subjectaccessreviews install edges/edge-1",
            "PATCH hub workspaces/org-a/ws status",
            "POST edge namespaces/org-a-hello",
            // The installer's grant in its namespace, bound as who it is there.
            "POST edge selfsubjectreviews",
            "POST edge rolebindings/org-a-hello/providers-installer",
            "POST edge serviceaccounts/org-a-hello/hello-1-runner",
            "POST edge roles/org-a-hello/hello-1-runner",
            "POST edge rolebindings/org-a-hello/hello-1-runner",
            "POST edge jobs/org-a-hello/hello-1",
            "PATCH hub workspaces/org-a/ws status",
        ]
    );
    let status = world.status();
    assert_eq!(status.attempt, Some(1));
    assert_eq!(status.job.as_deref(), Some("hello-1"));
    let job: Job = world.edge.get(RELEASE_NAMESPACE, "hello-1").unwrap();
    assert_eq!(
        status.job_uid, job.metadata.uid,
        "the Job made is the one recorded"
    );
    assert_eq!(status.job_result, None);
    assert_eq!(world.condition("Progressing").0, "JobRunning");
    assert_eq!(requeue, Requeue::requeue(Duration::from_secs(300)));

    world.job_ends("hello-1", true);
    world.helm_records(1, "deployed");
    world.watches_catch_up();
    world.reconcile().await.unwrap();
    assert_eq!(
        world.requests(),
        [
            "POST hub events/org-a JobSucceeded",
            "PATCH hub workspaces/org-a/ws status",
            "DELETE edge serviceaccounts/org-a-hello/hello-1-runner",
            "DELETE edge roles/org-a-hello/hello-1-runner",
            "DELETE edge rolebindings/org-a-hello/hello-1-runner",
            "PATCH edge jobs/org-a-hello/hello-1",
            "PATCH hub workspaces/org-a/ws status",
            "GET edge secrets/org-a-hello/sh.helm.release.v1.hello.v1",
        ]
    );
    let status = world.status();
    assert_eq!(status.job_result, Some(JobResult::Succeeded));
    let release = status.release.expect("the installed release is recorded");
    assert_eq!((release.name.as_str(), release.revision), ("hello", 1));
    assert!(
        world
            .edge
            .get::<ServiceAccount>(RELEASE_NAMESPACE, "hello-1-runner")
            .is_none()
    );
    let job: Job = world.edge.get(RELEASE_NAMESPACE, "hello-1").unwrap();
    assert!(
        job.metadata.finalizers.unwrap_or_default().is_empty(),
        "the Job is released"
    );
}

/// Values past the Job's annotation limit travel in a Secret, made before the Job.
#[tokio::test]
async fn large_values_go_to_the_edge_in_a_secret() {
    let world = World::new();
    let large = "x".repeat(names::VALUES_ANNOTATION_LIMIT);
    world.create_workspace(Plan {
        values: Some(serde_json::json!({"blob": large})),
        ..first_plan()
    });
    world.reconcile().await.unwrap();
    let requests = world.requests();
    assert_eq!(
        requests[requests.len() - 4..],
        [
            "POST edge rolebindings/org-a-hello/hello-1-runner",
            "POST edge secrets/org-a-hello/hello-1-values",
            "POST edge jobs/org-a-hello/hello-1",
            "PATCH hub workspaces/org-a/ws status",
        ]
    );
    assert!(
        world
            .edge
            .get::<Secret>(RELEASE_NAMESPACE, "hello-1-values")
            .is_some()
    );
}
