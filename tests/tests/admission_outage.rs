//! What holds when the webhook is down or unregistered: failurePolicy Fail refuses every
//! Workspace write, and the CRD's own rules still pin an active attempt.

use std::path::Path;

use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use providers_shared::api::{Edge, Recipe, RecipeSpec, Workspace};
use providers_tests::{
    Supervised, User,
    fixtures::{self, REPOSITORY},
    platform,
    webhook::Webhook,
};
use serde_json::json;

fn workspace(name: &str) -> Workspace {
    fixtures::workspace(name, fixtures::with_values(json!({})))
}

fn message(result: Result<Workspace, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => status.message,
        Ok(ws) => panic!("admitted: {:?}", ws.spec),
        Err(other) => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn without_the_webhook_nothing_is_admitted_unsealed_and_the_pin_holds() {
    let plane = tokio::task::spawn_blocking(|| {
        Supervised::start(
            Path::new(env!("CARGO_BIN_EXE_providers-controlplane")),
            "outage",
        )
    })
    .await
    .unwrap()
    .unwrap();
    let info = plane.info.clone();
    platform::install(&info).unwrap();
    let mut webhook = Webhook::start(&info, &[REPOSITORY]).unwrap();
    let admin = info.client(User::Admin).await.unwrap();
    let recipe = fixtures::recipe(
        "demo",
        RecipeSpec {
            versions: fixtures::versions(&["0.1.0"]),
            values_schema: vec![],
            ..fixtures::recipe_spec()
        },
    );
    Api::<Recipe>::all(admin.clone())
        .create(&PostParams::default(), &recipe)
        .await
        .unwrap();
    let edge = fixtures::edge("edge-1");
    Api::<Edge>::all(admin.clone())
        .create(&PostParams::default(), &edge)
        .await
        .unwrap();
    platform::grant_install(&admin, "alice", "edge-1")
        .await
        .unwrap();
    webhook.register(&info).await.unwrap();

    let alice: Api<Workspace> = Api::namespaced(info.client(User::Alice).await.unwrap(), "org-a");
    alice
        .create(&PostParams::default(), &workspace("active"))
        .await
        .expect("sealed while the webhook runs");

    // The webhook stops; the configurations stay with failurePolicy: Fail.
    webhook.stop();
    let refused = message(
        alice
            .create(&PostParams::default(), &workspace("unsealed"))
            .await,
    );
    assert!(
        refused.contains("seal.providers.platform.dev")
            && refused.contains("failed calling webhook"),
        "{refused}"
    );
    let refused = message(
        alice
            .patch(
                "active",
                &PatchParams::default(),
                &Patch::Merge(&json!({"metadata": {"labels": {"a": "b"}}, "spec": {"retry": 1}})),
            )
            .await,
    );
    assert!(refused.contains("failed calling webhook"), "{refused}");
    assert!(alice.get_opt("unsealed").await.unwrap().is_none());

    // With the configurations deleted, the CRD's rules alone refuse a values edit during
    // the active attempt.
    Webhook::unregister(&info).unwrap();
    let mut refused = String::new();
    for _ in 0..50 {
        match alice
            .patch(
                "active",
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"values": {"x": 1}}})),
            )
            .await
        {
            Err(kube::Error::Api(status)) if status.message.contains("failed calling webhook") => {
                // The API server has not dropped the configuration yet.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            other => {
                refused = message(other);
                break;
            }
        }
    }
    assert!(
        refused.contains("spec.values") && refused.contains("cannot change while attempt"),
        "{refused}"
    );
    drop(webhook);
    tokio::task::spawn_blocking(move || plane.stop())
        .await
        .unwrap()
        .unwrap();
}
