//! The double answers as an API server does, through a real client.

use k8s_openapi::api::{batch::v1::Job, core::v1::ConfigMap};
use kube::{
    Api,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions},
};
use serde_json::json;

use super::*;

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut object = ConfigMap::default();
    object.metadata.name = Some(name.into());
    object.metadata.namespace = Some("ns".into());
    object.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    object
}

#[tokio::test]
async fn writes_are_guarded_and_logged_in_order() {
    let edge = ApiDouble::new("edge", "installer");
    let api: Api<ConfigMap> = Api::namespaced(edge.client(), "ns");
    let created = api
        .create(&PostParams::default(), &config_map("a", &[("app", "x")]))
        .await
        .unwrap();
    assert_eq!(created.metadata.uid.as_deref(), Some("edge-uid-1"));
    let again = api
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap_err();
    assert!(matches!(&again, kube::Error::Api(s) if s.is_already_exists()));
    api.create(&PostParams::default(), &config_map("b", &[("app", "y")]))
        .await
        .unwrap();
    let listed = api
        .list(&ListParams::default().labels("app=x"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    let failed_test = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "test", "path": "/metadata/uid", "value": "another"},
                    {"op": "add", "path": "/data", "value": {"k": "v"}},
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&failed_test, kube::Error::Api(s) if s.code == 422),
        "{failed_test:?}"
    );
    let precondition = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("another".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let refused = api.delete("a", &precondition).await.unwrap_err();
    assert!(matches!(&refused, kube::Error::Api(s) if s.is_conflict()));
    assert_eq!(
        edge.take_requests(),
        [
            "POST edge configmaps/ns/a",
            "POST edge configmaps/ns/a -> 409",
            "POST edge configmaps/ns/b",
            "LIST edge configmaps/ns app=x",
            "PATCH edge configmaps/ns/a -> 422",
            "DELETE edge configmaps/ns/a -> 409",
        ]
    );
}

#[tokio::test]
async fn finalizers_hold_a_deletion_and_the_status_is_its_own_subresource() {
    let edge = ApiDouble::new("edge", "installer");
    let mut job = Job::default();
    job.metadata.name = Some("j".into());
    job.metadata.namespace = Some("ns".into());
    job.metadata.finalizers = Some(vec!["keep".into()]);
    edge.put(&job);
    let api: Api<Job> = Api::namespaced(edge.client(), "ns");
    api.delete("j", &DeleteParams::default()).await.unwrap();
    let held: Job = edge.get("ns", "j").unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    let status = json!({"status": {"succeeded": 1}, "spec": {"parallelism": 9}});
    api.patch_status("j", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let written: Job = edge.get("ns", "j").unwrap();
    assert_eq!(written.status.unwrap().succeeded, Some(1));
    assert_eq!(
        written.spec.and_then(|s| s.parallelism),
        None,
        "only the status"
    );
    let release = json!({"metadata": {"finalizers": null}});
    api.patch("j", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    assert!(
        edge.get::<Job>("ns", "j").is_none(),
        "gone with its last finalizer"
    );
}

#[tokio::test]
async fn told_to_fail_it_refuses_or_turns_away_every_request_from_then_on() {
    let edge = ApiDouble::new("edge", "installer");
    let api: Api<ConfigMap> = Api::namespaced(edge.client(), "ns");
    edge.fail_after(1, Failure::Refused);
    api.create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    let error = api.get("a").await.unwrap_err();
    assert!(
        providers_runtime::unreachable::did_not_answer(&error),
        "{error:?}"
    );
    edge.recover();
    api.get("a").await.unwrap();
    edge.fail_after(0, Failure::Unavailable);
    let error = api.get("a").await.unwrap_err();
    assert!(
        matches!(&error, kube::Error::Api(s) if s.code == 503),
        "answered, with a refusal: {error:?}"
    );
    assert_eq!(
        edge.take_requests(),
        [
            "POST edge configmaps/ns/a",
            "GET edge configmaps/ns/a -> refused",
            "GET edge configmaps/ns/a",
            "GET edge configmaps/ns/a -> 503",
        ]
    );
}

#[tokio::test]
async fn doubles_beside_each_other_log_in_one_order_and_edits_are_not_requests() {
    let hub = ApiDouble::new("hub", "installer");
    let edge = hub.beside("edge", "installer");
    Api::<ConfigMap>::namespaced(edge.client(), "ns")
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    Api::<ConfigMap>::namespaced(hub.client(), "ns")
        .get_opt("a")
        .await
        .unwrap();
    let edited = edge
        .edit::<ConfigMap>("ns", "a", |c| {
            c.data = Some([("k".into(), "v".into())].into())
        })
        .unwrap();
    assert_eq!(edited.metadata.resource_version.as_deref(), Some("2"));
    assert_eq!(edge.all::<ConfigMap>().len(), 1);
    assert_eq!(
        edge.take_requests(),
        [
            "POST edge configmaps/ns/a",
            "GET hub configmaps/ns/a -> 404"
        ]
    );
}
