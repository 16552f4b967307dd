//! Drift: a revision of the release made outside the installer, seen in Helm's records.

use super::*;

#[tokio::test]
async fn a_release_upgraded_by_hand_is_recorded_as_drift() {
    let mut world = World::new();
    world.create_workspace(first_plan());
    world.reconcile().await.unwrap();
    world.job_ends("hello-1", true);
    world.helm_records(1, "deployed");
    world.watches_catch_up();
    world.reconcile().await.unwrap();
    world.requests();

    // `helm upgrade` by hand: revision 1 superseded, revision 2 deployed.
    world
        .edge
        .edit::<Secret>(RELEASE_NAMESPACE, "sh.helm.release.v1.hello.v1", |record| {
            record
                .metadata
                .labels
                .get_or_insert_default()
                .insert("status".into(), "superseded".into());
        });
    let upgraded = world.helm_records(2, "deployed");
    world.watches_catch_up();
    world.reconcile().await.unwrap();
    assert_eq!(
        world.requests(),
        [
            // What revision 2 installs, to say what changed (it cannot be decoded here).
            "GET edge secrets/org-a-hello/sh.helm.release.v1.hello.v2",
            "POST hub events/org-a ReleaseDrifted",
            "PATCH hub workspaces/org-a/ws status",
        ]
    );
    let drift = world.status().drift.expect("the drift is recorded");
    assert_eq!(drift.reason, "ReleaseChanged");
    assert_eq!(drift.revision, Some(2));
    assert_eq!(drift.record_uid, upgraded.metadata.uid);
    assert_eq!(world.status().job_result, Some(JobResult::Succeeded));

    // Recorded once: the next reconcile finds nothing new to read or write.
    world.reconcile().await.unwrap();
    assert_eq!(world.requests(), Vec::<String>::new());
}
