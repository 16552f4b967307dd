//! A deletion: new attempts fenced, the attempt's Job removed, the namespace released for
//! a later Workspace, then the finalizer removed and the Workspace gone.

use kube::{Api, api::DeleteParams};

use super::*;

#[tokio::test]
async fn a_deleted_workspace_is_fenced_cleaned_up_and_let_go() {
    let mut world = World::new();
    world.create_workspace(first_plan());
    world.reconcile().await.unwrap();
    world.job_ends("hello-1", true);
    world.helm_records(1, "deployed");
    world.watches_catch_up();
    world.reconcile().await.unwrap();
    world.watches_catch_up();
    world.requests();

    Api::<Workspace>::namespaced(world.hub.client(), NAMESPACE)
        .delete(NAME, &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        world.workspace().metadata.deletion_timestamp.is_some(),
        "held by the finalizer"
    );
    let requeue = world.reconcile().await.unwrap();
    assert_eq!(
        world.requests(),
        [
            "DELETE hub workspaces/org-a/ws",
            // Deleting is decided from the Workspace read live, never from a cache.
            "GET hub workspaces/org-a/ws",
            "POST hub events/org-a DeletionFenced",
            "PATCH hub workspaces/org-a/ws status",
            "DELETE edge jobs/org-a-hello/hello-1",
            "PATCH edge namespaces/org-a-hello",
            "POST hub events/org-a Released",
            "PATCH hub workspaces/org-a/ws",
        ]
    );
    assert!(
        world.hub.get::<Workspace>(NAMESPACE, NAME).is_none(),
        "gone"
    );
    assert!(
        world
            .edge
            .get::<Job>(RELEASE_NAMESPACE, "hello-1")
            .is_none()
    );
    let namespace: Namespace = world.edge.get("", RELEASE_NAMESPACE).unwrap();
    assert_eq!(
        namespace
            .metadata
            .labels
            .unwrap_or_default()
            .get(names::LABEL_RELEASED)
            .map(String::as_str),
        Some("true"),
        "the namespace stays with the release, released for a later Workspace"
    );
    // The pass ends as the decision said (look again at the resync); the Workspace's
    // deletion from the hub's watch then takes it off the queue.
    assert_eq!(requeue, Requeue::requeue(world.ctx.config.resync));
}
