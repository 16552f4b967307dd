//! The edge lost in the middle of a pass: its API stops answering after the namespace and
//! the installer's grant are made. The pass stops at the refused request, nothing after it
//! is sent or recorded as done, and the Workspace says the edge is unreachable.

use super::*;
use crate::support::api_double::Failure;

#[tokio::test]
async fn an_edge_lost_mid_pass_stops_it_without_recording_what_was_not_done() {
    let world = World::new();
    // The live read of the namespace, its create, the SelfSubjectReview and the grant.
    world.edge.fail_after(4, Failure::Refused);
    world.create_workspace(first_plan());

    let requeue = world.reconcile().await.unwrap();
    assert_eq!(
        world.requests(),
        [
            "GET edge namespaces/org-a-hello -> 404",
            "POST hub subjectaccessreviews use recipes/hello",
            "POST hub subjectaccessreviews install edges/edge-1",
            "PATCH hub workspaces/org-a/ws status",
            "POST edge namespaces/org-a-hello",
            "POST edge selfsubjectreviews",
            "POST edge rolebindings/org-a-hello/providers-installer",
            "POST edge serviceaccounts/org-a-hello/hello-1-runner -> refused",
            // The next pass sees the edge unreachable: it says so and sends it nothing.
            "PATCH hub workspaces/org-a/ws status",
        ]
    );
    assert!(world.edge.get::<Namespace>("", RELEASE_NAMESPACE).is_some());
    assert!(
        world
            .edge
            .get::<Job>(RELEASE_NAMESPACE, "hello-1")
            .is_none()
    );
    let status = world.status();
    assert_eq!(status.job_uid, None, "no Job is recorded");
    assert_eq!(status.job_result, None);
    assert_eq!(world.condition("Ready").0, "EdgeUnreachable");
    assert_eq!(requeue, Requeue::requeue(Duration::from_secs(1)));
    let cache = world
        .ctx
        .edges
        .lookup(EDGE)
        .cache
        .expect("the edge's caches");
    assert!(
        cache.unreachable().is_some(),
        "decisions see the edge unreachable until a watch or probe hears from it"
    );
}
