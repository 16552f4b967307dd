//! The fleet's gauges track watch events, a relist replaces them, and the oldest attempt
//! without a result moves on when it gets one.

use kube::runtime::{reflector, watcher::Event};
use serde_json::json;

use super::*;
use providers_runtime::admin::Exposition;

/// A Workspace on `edge`, sealed by `key` at `sealed_at` (Unix seconds) for attempt 1, with
/// `status` as given.
fn workspace(
    name: &str,
    edge: &str,
    key: &str,
    sealed_at: i64,
    status: serde_json::Value,
) -> Workspace {
    let sealed = k8s_openapi::jiff::Timestamp::from_second(sealed_at).unwrap();
    serde_json::from_value(json!({
        "apiVersion": "providers.platform.dev/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": name, "namespace": "org-a", "uid": format!("uid-{name}")},
        "spec": {
            "recipe": "hello",
            "edge": edge,
            "plan": {
                "attempt": 1, "attemptID": "a1", "retry": 0,
                "workspace": {"namespace": "org-a", "name": name, "uid": ""},
                "org": "org-a", "provider": "hello", "owner": {"username": "alice"},
                "chart": {"repository": "https://charts.example", "name": "hello"},
                "version": "0.1.0", "release": "hello", "namespace": "org-a-hello",
                "edgeName": edge, "cluster": "c1", "edgeWorkspaceUUID": "u1", "job": "hello-1",
                "sealedAt": sealed.to_string(),
                "seal": {"keyID": key, "algorithm": "Ed25519", "signature": "c2ln"}
            }
        },
        "status": status
    }))
    .unwrap()
}

fn gauge(text: &str, series: &str) -> Option<i64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn gauges_track_the_watch_and_a_relist_replaces_them() {
    let metrics = Arc::new(Metrics::new());
    let fleet = Fleet::new(metrics.clone());
    let (store, mut writer) = reflector::store::<Workspace>();
    let mut feed = |event: Event<Workspace>| {
        fleet.on_event(&store, &event);
        writer.apply_watcher_event(&event);
    };
    let running = workspace(
        "a",
        "edge-1",
        "k1",
        1_000,
        json!({"phase": "Progressing", "attempt": 1}),
    );
    let waiting = workspace("b", "edge-1", "k1", 2_000, json!(null));
    feed(Event::Init);
    feed(Event::InitApply(running.clone()));
    feed(Event::InitApply(waiting.clone()));
    feed(Event::InitDone);
    let text = metrics.encode().unwrap();
    for (series, value) in [
        (
            r#"providers_installer_workspaces{edge="edge-1",phase="Progressing"}"#,
            1,
        ),
        (
            r#"providers_installer_workspaces{edge="edge-1",phase="Unobserved"}"#,
            1,
        ),
        (r#"providers_installer_active_attempts{edge="edge-1"}"#, 2),
        (
            r#"providers_installer_oldest_active_attempt_sealed_timestamp_seconds{edge="edge-1"}"#,
            1_000,
        ),
        (
            r#"providers_installer_plans{key_id="k1",plan="current"}"#,
            2,
        ),
        (r#"providers_installer_cleanup_backlog{edge="edge-1"}"#, 0),
    ] {
        assert_eq!(gauge(&text, series), Some(value), "{series}\n{text}");
    }

    // The first attempt fails and its cleanup is outstanding; then drift on another edge.
    let failed = workspace(
        "a",
        "edge-1",
        "k1",
        1_000,
        json!({"phase": "Failed", "attempt": 1, "jobResult": "Failed", "cleanedUp": false}),
    );
    feed(Event::Apply(failed.clone()));
    let text = metrics.encode().unwrap();
    for (series, value) in [
        (
            r#"providers_installer_workspaces{edge="edge-1",phase="Progressing"}"#,
            0,
        ),
        (
            r#"providers_installer_workspaces{edge="edge-1",phase="Failed"}"#,
            1,
        ),
        (r#"providers_installer_active_attempts{edge="edge-1"}"#, 1),
        (
            r#"providers_installer_oldest_active_attempt_sealed_timestamp_seconds{edge="edge-1"}"#,
            2_000,
        ),
        (r#"providers_installer_cleanup_backlog{edge="edge-1"}"#, 1),
    ] {
        assert_eq!(gauge(&text, series), Some(value), "{series}\n{text}");
    }
    // The same object again changes nothing; a delete takes its share out.
    feed(Event::Apply(failed.clone()));
    feed(Event::Delete(waiting.clone()));
    let text = metrics.encode().unwrap();
    assert_eq!(
        gauge(
            &text,
            r#"providers_installer_workspaces{edge="edge-1",phase="Failed"}"#
        ),
        Some(1)
    );
    assert_eq!(
        gauge(
            &text,
            r#"providers_installer_workspaces{edge="edge-1",phase="Unobserved"}"#
        ),
        Some(0)
    );
    assert_eq!(
        gauge(
            &text,
            r#"providers_installer_active_attempts{edge="edge-1"}"#
        ),
        Some(0)
    );
    assert!(
        !text.contains("providers_installer_oldest_active_attempt_sealed_timestamp_seconds{"),
        "no attempt without a result is left:\n{text}"
    );

    // A relist that finds only a drifted Workspace on edge-2 replaces everything.
    let drifted = workspace(
        "c",
        "edge-2",
        "k2",
        3_000,
        json!({"phase": "Succeeded", "attempt": 1, "jobResult": "Succeeded", "cleanedUp": true,
               "drift": {"reason": "ReleaseUpgraded", "message": "m", "detectedAt": "2026-01-01T00:00:00Z"}}),
    );
    feed(Event::Init);
    feed(Event::InitApply(drifted));
    feed(Event::InitDone);
    let text = metrics.encode().unwrap();
    assert!(!text.contains(r#"edge="edge-1""#), "{text}");
    for (series, value) in [
        (
            r#"providers_installer_workspaces{edge="edge-2",phase="Succeeded"}"#,
            1,
        ),
        (
            r#"providers_installer_workspaces_drifted{edge="edge-2"}"#,
            1,
        ),
        (
            r#"providers_installer_plans{key_id="k2",plan="current"}"#,
            1,
        ),
    ] {
        assert_eq!(gauge(&text, series), Some(value), "{series}\n{text}");
    }
}
