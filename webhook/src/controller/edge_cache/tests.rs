//! The edge caches: what they keep and what they answer.

use super::*;
use kube::runtime::reflector::store::Writer;
use kube::runtime::{reflector, watcher};

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
fn cache() -> (EdgeCache, Writer<PartialObjectMeta<ServiceAccount>>) {
    let (service_accounts, writer) = reflector::store();
    let cache = EdgeCache {
        namespaces: reflector::store().0,
        service_accounts,
        roles: reflector::store().0,
        role_bindings: reflector::store().0,
        secrets: reflector::store().0,
        helm_records: reflector::store().0,
        jobs: reflector::store().0,
        own: Arc::new(Mutex::new(HashMap::new())),
        followed: Arc::new(Mutex::new(HashMap::new())),
        unreachable: Arc::new(Mutex::new(None)),
        listed: Arc::default(),
    };
    (cache, writer)
}

const SA: Cached = Cached::Attempt(Kind::ServiceAccount);

#[test]
fn an_own_create_is_seen_before_the_watch_brings_it_and_forgotten_after() {
    let (cache, mut writer) = cache();
    assert!(cache.object(SA, "ns", "r").is_none());
    cache.wrote(SA, &service_account("r", "ns", "u1"));
    assert_eq!(cache.object(SA, "ns", "r").unwrap().uid, "u1");
    writer.apply_watcher_event(&watcher::Event::Apply(meta("r", "ns", "u1")));
    assert_eq!(cache.object(SA, "ns", "r").unwrap().uid, "u1");
    assert!(
        cache.lock().is_empty(),
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
    cache.wrote(SA, &service_account("r", "ns", "theirs"));
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
    let listed = Arc::new(Listed::default());
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
