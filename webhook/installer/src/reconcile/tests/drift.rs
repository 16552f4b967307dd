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

/// A chart's Secret, as its release's manifest renders it.
const SECRET_MANIFEST: &str = "---
# Source: hello/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: hello-key
  labels:
    app: hello
type: Opaque
data:
  key: aGk=
";

/// The Secret of [`SECRET_MANIFEST`] on the edge, its `key` holding `value`.
fn hello_key(value: &str) -> Secret {
    let mut secret = Secret::default();
    secret.metadata.name = Some("hello-key".into());
    secret.metadata.namespace = Some(RELEASE_NAMESPACE.into());
    secret.metadata.labels = Some(
        [("app", "hello"), ("app.kubernetes.io/managed-by", "Helm")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    );
    secret.type_ = Some("Opaque".into());
    secret.data = Some([("key".to_owned(), k8s_openapi::ByteString(value.into()))].into());
    secret
}

/// Attempt 1 installed, its release [`SECRET_MANIFEST`] with its Secret on the edge as
/// the chart has it, the installer comparing contents every second; reconciled once
/// since the attempt ended.
async fn installed_with_a_secret() -> World {
    let mut world = World::with_settings(Settings {
        content_check_interval_seconds: 1,
        ..Settings::default()
    });
    world.create_workspace(first_plan());
    world.reconcile().await.unwrap();
    world.job_ends("hello-1", true);
    world.helm_record_of(SECRET_MANIFEST);
    world.edge.put(&hello_key("hi"));
    world.watches_catch_up();
    world.reconcile().await.unwrap();
    world
}

#[tokio::test]
async fn a_secret_is_compared_by_the_edge_after_the_attempt_and_once_per_interval() {
    let mut world = installed_with_a_secret().await;
    let requests = world.requests();
    // Right after the attempt: the record read once, for its objects and the check
    // (the pass parses the manifest it read), whose only request of the Secret is a dry
    // run the edge refuses for its rename (400): every test held.
    let check: Vec<&String> = requests
        .iter()
        .filter(|r| r.contains("hello-key") || r.contains("hello.v1"))
        .collect();
    assert_eq!(
        check,
        [
            "GET edge secrets/org-a-hello/sh.helm.release.v1.hello.v1",
            "PATCH edge secrets/org-a-hello/hello-key -> 400",
        ],
        "{requests:#?}"
    );
    assert_eq!(world.status().drift, None);

    // An edit no field manager shows: within the interval nothing is asked.
    world.edge.put(&hello_key("evil"));
    world.watches_catch_up();
    world.reconcile().await.unwrap();
    assert_eq!(world.requests(), Vec::<String>::new());

    // The next check: its three tests (type, label, key) fail together (422), then by
    // halves: the type's hold (400), the label's and key's fail; the label's hold, the
    // key's fail.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    world.reconcile().await.unwrap();
    assert_eq!(
        world.requests(),
        [
            "GET edge secrets/org-a-hello/sh.helm.release.v1.hello.v1",
            "PATCH edge secrets/org-a-hello/hello-key -> 422",
            "PATCH edge secrets/org-a-hello/hello-key -> 400",
            "PATCH edge secrets/org-a-hello/hello-key -> 422",
            "PATCH edge secrets/org-a-hello/hello-key -> 400",
            "PATCH edge secrets/org-a-hello/hello-key -> 422",
            "POST hub events/org-a ReleaseDrifted",
            "PATCH hub workspaces/org-a/ws status",
        ]
    );
    let drift = world.status().drift.expect("the drift is recorded");
    assert_eq!(drift.reason, "ObjectChanged");
    let found = &drift.objects[0];
    assert_eq!(
        (
            found.name.as_str(),
            found.fields.as_slice(),
            found.found_by.as_deref()
        ),
        (
            "hello-key",
            ["data.key".to_owned()].as_slice(),
            Some("Contents")
        )
    );
    // The edge's Secret is as it was: the tests were dry runs that failed.
    let kept: Secret = world.edge.get(RELEASE_NAMESPACE, "hello-key").unwrap();
    assert_eq!(kept.data.unwrap()["key"].0, b"evil");
}

#[tokio::test]
async fn a_release_record_rewritten_to_match_an_edit_is_drift() {
    let mut world = installed_with_a_secret().await;
    assert_eq!(world.status().drift, None);

    // The Secret edited, and Helm's record rewritten in place so that its manifest says
    // the same: compared with the record as it is now, nothing would differ.
    world.edge.put(&hello_key("evil"));
    world.rewrite_helm_record(&SECRET_MANIFEST.replace("aGk=", "ZXZpbA=="));
    world.watches_catch_up();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    world.reconcile().await.unwrap();
    let drift = world.status().drift.expect("the rewrite is drift");
    let record = &drift.objects[0];
    assert_eq!(
        (
            record.name.as_str(),
            record.fields.as_slice(),
            record.found_by.as_deref()
        ),
        (
            "sh.helm.release.v1.hello.v1",
            ["data.release".to_owned()].as_slice(),
            Some("Contents")
        )
    );
}
