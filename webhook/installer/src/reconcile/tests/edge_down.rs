//! The edge down: its probe found it unreachable. Nothing is sent to it, the Workspace
//! says why it waits, and the reconcile backs off.

use super::*;
use crate::support::api_double::Failure;

#[tokio::test]
async fn an_unreachable_edge_gets_no_request_and_the_workspace_says_so() {
    let world = World::new();
    world.ctx.edges.record_probe(
        EDGE,
        EdgeState::Unreachable("connection refused".into()),
        None,
    );
    world.edge.fail_after(0, Failure::Refused);
    world.create_workspace(first_plan());

    let requeue = world.reconcile().await.unwrap();
    assert_eq!(world.requests(), ["PATCH hub workspaces/org-a/ws status"]);
    let (reason, message) = world.condition("Ready");
    assert_eq!(reason, "EdgeUnreachable");
    assert_eq!(
        message,
        "waiting to start the attempt: the API of edge \"edge-1\" is unreachable (connection refused); retrying with backoff"
    );
    let status = world.status();
    assert_eq!((status.job_uid, status.preparation), (None, None));
    assert_eq!(requeue, Requeue::requeue(Duration::from_secs(1)));

    // Backing off: the next wait is longer.
    world.reconcile().await.unwrap();
    assert_eq!(world.requests(), Vec::<String>::new(), "nothing new to say");
}
