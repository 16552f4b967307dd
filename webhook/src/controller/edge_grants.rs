//! The installer's access to a failed runner's Pod and log on an edge, in that release
//! namespace only. The hub's identity holds no right on Pods anywhere by itself; when a
//! Job of one of its namespaces fails, it binds itself there to the ClusterRole
//! `providers-edge-runner-logs` (Pods get/list, pods/log get), through the RoleBinding
//! `providers-runner-logs` that the edge's confinement policy admits, and nothing else.
//! Failures are rare, so a successful attempt costs no write for it.

use std::time::Duration;

use k8s_openapi::api::{
    authentication::v1::SelfSubjectReview,
    rbac::v1::{RoleBinding, RoleRef, Subject},
};
use kube::{
    Api, Client,
    api::{ObjectMeta, PostParams},
};

/// The RoleBinding in a release namespace that lets the hub's identity read its Pods.
pub const BINDING: &str = "providers-runner-logs";
/// The ClusterRole it binds (manifests/edge/installer-rbac.yaml).
pub const CLUSTER_ROLE: &str = "providers-edge-runner-logs";

/// How long to wait for RBAC to honour a new binding.
const PROPAGATION: Duration = Duration::from_secs(3);

/// Runs `read` in `namespace`; when RBAC refuses it, binds the installer's edge identity to
/// the log reader role there and tries again until the binding takes effect.
pub async fn with_access<T, F, Fut>(
    client: &Client,
    namespace: &str,
    read: F,
) -> Result<T, kube::Error>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    match read().await {
        Err(kube::Error::Api(status)) if status.code == 403 => {
            grant(client, namespace).await?;
            let deadline = tokio::time::Instant::now() + PROPAGATION;
            loop {
                match read().await {
                    Err(kube::Error::Api(status))
                        if status.code == 403 && tokio::time::Instant::now() < deadline =>
                    {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    other => return other,
                }
            }
        }
        other => other,
    }
}

/// Creates the RoleBinding for the identity `client` authenticates as (asked once, with a
/// SelfSubjectReview); one that exists already is left as it is.
async fn grant(client: &Client, namespace: &str) -> Result<(), kube::Error> {
    let review = Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    let username = review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default();
    let subject = match username
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
    {
        Some((sa_namespace, name)) => Subject {
            kind: "ServiceAccount".into(),
            name: name.to_owned(),
            namespace: Some(sa_namespace.to_owned()),
            ..Default::default()
        },
        None => Subject {
            kind: "User".into(),
            name: username,
            api_group: Some("rbac.authorization.k8s.io".into()),
            ..Default::default()
        },
    };
    let binding = RoleBinding {
        metadata: ObjectMeta {
            name: Some(BINDING.into()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: CLUSTER_ROLE.into(),
        },
        subjects: Some(vec![subject]),
    };
    match Api::<RoleBinding>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
        Err(error) => Err(error),
    }
}
