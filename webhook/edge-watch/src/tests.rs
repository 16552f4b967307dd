//! The edge caches: what they keep and what they answer.

use super::*;
use compact_store::{CompactWriter, compact_store};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use own_edge_writes::{EdgeWrite, EdgeWrites, Key, OWN_WRITES_TTL, OwnEdgeWrites};
use release_objects::ReleaseObjects;
use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

fn meta(name: &str, namespace: &str, uid: &str) -> PartialObjectMeta<ServiceAccount> {
    PartialObjectMeta::<ServiceAccount> {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            uid: Some(uid.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn service_account(name: &str, namespace: &str, uid: &str) -> ServiceAccount {
    ServiceAccount {
        metadata: meta(name, namespace, uid).metadata,
        ..Default::default()
    }
}

/// A cache of ServiceAccounts fed by hand, the other stores empty and never ready.
fn cache() -> (
    EdgeCache,
    CompactWriter<PartialObjectMeta<ServiceAccount>, CompactMeta>,
) {
    let (service_accounts, writer) = compact_store(CompactMeta::of_partial::<ServiceAccount>);
    let cache = EdgeCache {
        namespaces: CompactStore::default(),
        service_accounts,
        roles: CompactStore::default(),
        role_bindings: CompactStore::default(),
        namespaced: Arc::new(NamespaceWatches::new(
            None,
            Arc::new(Mutex::new(HashMap::new())),
            Arc::new(|_: &str| {}),
            Arc::new(|_: &str| true),
        )),
        jobs: CompactStore::default(),
        own: OwnEdgeWrites::new(),
        release_workspaces: Arc::new(Mutex::new(HashMap::new())),
        unreachable: Reachability::default(),
        listed: Arc::default(),
        releases: ReleaseObjects::default(),
        identity: Arc::default(),
    };
    (cache, writer)
}

const SA: Cached = Cached::Attempt(Kind::ServiceAccount);

#[test]
fn an_own_create_is_seen_before_the_watch_brings_it_and_forgotten_after() {
    let (cache, mut writer) = cache();
    assert!(cache.object(SA, "ns", "r").is_none());
    cache.wrote_object(SA, &service_account("r", "ns", "u1"));
    assert_eq!(cache.object(SA, "ns", "r").unwrap().uid, "u1");
    writer.apply_watcher_event(&watcher::Event::Apply(meta("r", "ns", "u1")));
    assert_eq!(cache.object(SA, "ns", "r").unwrap().uid, "u1");
    assert!(
        cache.own.len() == 0,
        "caught up: the own write is forgotten"
    );
}

#[test]
fn an_own_deletion_hides_the_deleted_object_not_a_newer_one() {
    let (cache, mut writer) = cache();
    writer.apply_watcher_event(&watcher::Event::Apply(meta("r", "ns", "u1")));
    cache.deleted(SA, "ns", "r", "u1");
    assert!(cache.object(SA, "ns", "r").is_none());
    // A replacement with another UID is not hidden by the deletion of the first.
    writer.apply_watcher_event(&watcher::Event::Apply(meta("r", "ns", "u2")));
    assert_eq!(cache.object(SA, "ns", "r").unwrap().uid, "u2");
}

#[test]
fn an_object_outside_the_caches_is_learned_from_the_live_read() {
    let (cache, _writer) = cache();
    // Someone else's object, unlabelled, never in the label-selected cache.
    cache.wrote_object(SA, &service_account("r", "ns", "theirs"));
    assert_eq!(cache.object(SA, "ns", "r").unwrap().uid, "theirs");
}

#[test]
fn a_failed_write_marks_the_edge_unreachable_until_it_answers() {
    let (cache, _writer) = cache();
    assert!(cache.unreachable().is_none());
    cache.set_unreachable(Some("connection refused".into()));
    assert_eq!(cache.unreachable().as_deref(), Some("connection refused"));
    cache.set_unreachable(None);
    assert!(cache.unreachable().is_none());
}

#[tokio::test]
async fn every_reconcile_waiting_for_the_first_lists_is_woken() {
    let listed = Arc::new(WatchesListed::default());
    let waiters: Vec<_> = (0..8)
        .map(|_| {
            let listed = listed.clone();
            tokio::spawn(async move { listed.wait_all().await })
        })
        .collect();
    tokio::task::yield_now().await;
    listed.of(2);
    listed.one_more();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert!(
        waiters.iter().all(|waiter| !waiter.is_finished()),
        "one list of two"
    );
    listed.one_more();
    for waiter in waiters {
        tokio::time::timeout(std::time::Duration::from_secs(1), waiter)
            .await
            .expect("every waiter is woken")
            .unwrap();
    }
}

fn secret(name: &str, namespace: &str, labels: &[(&str, &str)]) -> PartialObjectMeta<Secret> {
    PartialObjectMeta::<Secret> {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            uid: Some(format!("uid-{name}")),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn secrets_and_helm_records_are_read_from_their_namespace_s_own_watch() {
    let (cache, _writer) = cache();
    let mut secrets = cache.namespaced.insert_listed("ns");
    secrets.apply_watcher_event(&watcher::Event::Apply(secret("values", "ns", &[])));
    let record = [
        ("owner", "helm"),
        ("name", "r"),
        ("status", "deployed"),
        ("version", "1"),
    ];
    secrets.apply_watcher_event(&watcher::Event::Apply(secret(
        "sh.helm.release.v1.r.v1",
        "ns",
        &record,
    )));
    let kind = Cached::Attempt(Kind::Secret);
    assert_eq!(
        cache.object(kind, "ns", "values").unwrap().uid,
        "uid-values"
    );
    assert_eq!(cache.release_revision("ns", "r", None).unwrap().revision, 1);
    assert_eq!(
        cache.release_revision("ns", "r", Some(1)).unwrap().revision,
        1
    );
    // Another namespace is another watch: nothing of "ns" is seen there.
    assert!(cache.object(kind, "other", "values").is_none());
    assert!(cache.release_revision("other", "r", None).is_none());
}

#[test]
fn a_secret_named_like_a_record_without_helm_s_label_is_not_a_revision() {
    let (cache, _writer) = cache();
    let mut secrets = cache.namespaced.insert_listed("ns");
    let forged = [("name", "r"), ("status", "deployed"), ("version", "7")];
    secrets.apply_watcher_event(&watcher::Event::Apply(secret(
        "sh.helm.release.v1.r.v7",
        "ns",
        &forged,
    )));
    assert!(cache.release_revision("ns", "r", None).is_none());
    assert!(cache.release_revision("ns", "r", Some(7)).is_none());
}

#[tokio::test]
async fn a_namespace_not_watched_is_ready_at_once_and_one_listed_is_ready() {
    let (cache, _writer) = cache();
    assert!(cache.ready_in("unknown").await);
    let _secrets = cache.namespaced.insert_listed("ns");
    assert!(cache.ready_in("ns").await);
    assert_eq!(cache.namespaces_watched(), 1);
    cache
        .namespaced
        .keep_only(&std::collections::HashSet::new());
    assert_eq!(cache.namespaces_watched(), 0);
}

#[test]
fn own_writes_of_objects_never_read_again_are_dropped_after_their_ttl() {
    let key = |name: &str| Key {
        kind: Cached::Attempt(Kind::Job),
        namespace: "hello".into(),
        name: name.into(),
    };
    let gone = || EdgeWrite::Gone { uid: "u".into() };
    let start = Instant::now();
    let mut own = EdgeWrites::new(OWN_WRITES_TTL);
    own.insert(key("first"), gone(), start);
    let soon = start + Duration::from_secs(1);
    own.insert(key("second"), gone(), soon);
    assert_eq!(own.len(), 2, "within the TTL, both are kept");
    let later = start + OWN_WRITES_TTL + Duration::from_secs(2);
    own.insert(key("third"), gone(), later);
    let mut kept: Vec<_> = own.keys().map(|k| k.name.clone()).collect();
    kept.sort();
    assert_eq!(
        kept,
        ["third"],
        "the expired writes are swept at the next write"
    );
}

/// Who the installer is on an edge is asked once per credential (its caches), not once per
/// namespace it binds its grant in.
#[tokio::test]
async fn the_installer_s_identity_is_asked_once_per_credential() {
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = asked.clone();
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert!(request.uri().path().ends_with("/selfsubjectreviews"));
        let review = serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "SelfSubjectReview",
            "status": {"userInfo": {"username": "system:serviceaccount:ops:installer"}},
        });
        async move {
            Ok::<_, std::convert::Infallible>(http::Response::new(kube::client::Body::from(
                serde_json::to_vec(&review).unwrap(),
            )))
        }
    });
    let client = kube::Client::new(service, "default");
    let (edge, _writer) = cache();
    for _ in 0..3 {
        assert_eq!(
            edge.identity(&client).await.unwrap(),
            "system:serviceaccount:ops:installer"
        );
    }
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    let (another_credential, _writer) = cache();
    another_credential.identity(&client).await.unwrap();
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
}
