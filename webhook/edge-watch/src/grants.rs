//! The installer's rights inside a release namespace on an edge. The hub's identity holds
//! no right on Secrets or Pods anywhere by itself: in a namespace it prepared, it binds
//! itself to a ClusterRole of the shipped edge manifests through a RoleBinding of a fixed
//! name, which the edge's confinement policy admits for that identity and nothing else.
//!
//! - [`NAMESPACE_RIGHTS`]: Secrets (Helm's release records, an attempt's values, the
//!   provider's runtime credential) and metadata of the objects a release made. Bound when
//!   the installer creates the namespace, or the first time it is refused there (a
//!   namespace prepared by an older installer).
//! - [`RUNNER_LOGS`]: a failed runner's Pod and log, bound on the first failure there, so
//!   a successful attempt costs no write for it.

use std::time::Duration;

use k8s_openapi::api::{
    authentication::v1::SelfSubjectReview,
    rbac::v1::{RoleBinding, RoleRef, Subject},
};
use kube::{
    Api, Client,
    api::{ObjectMeta, PostParams},
};

/// A RoleBinding of a fixed name in a release namespace, to one ClusterRole of
/// manifests/edge/installer-rbac.yaml.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    pub binding: &'static str,
    pub cluster_role: &'static str,
}

/// Secrets and release objects' metadata in a namespace the installer prepared.
pub const NAMESPACE_RIGHTS: Grant = Grant {
    binding: "providers-installer",
    cluster_role: "providers-edge-namespace",
};

/// A failed runner's Pod and log.
pub const RUNNER_LOGS: Grant = Grant {
    binding: "providers-runner-logs",
    cluster_role: "providers-edge-runner-logs",
};

/// How long to wait for RBAC to honour a new binding.
const PROPAGATION: Duration = Duration::from_secs(3);

/// Whether `error` is RBAC's refusal.
pub fn is_forbidden(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 403)
}

/// Runs `call` in `namespace`; when RBAC refuses it, binds the installer's edge identity
/// there with `grant` and tries again until the binding takes effect.
pub async fn with_grant<T, F, Fut>(
    client: &Client,
    namespace: &str,
    grant: Grant,
    call: F,
) -> Result<T, kube::Error>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    match call().await {
        Err(error) if is_forbidden(&error) => {
            bind(client, namespace, grant).await?;
            let deadline = tokio::time::Instant::now() + PROPAGATION;
            loop {
                match call().await {
                    Err(error)
                        if is_forbidden(&error) && tokio::time::Instant::now() < deadline =>
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

/// Creates `grant`'s RoleBinding in `namespace` for the identity `client` authenticates as
/// (asked with a SelfSubjectReview); one that exists already is left as it is.
pub async fn bind(client: &Client, namespace: &str, grant: Grant) -> Result<(), kube::Error> {
    bind_as(client, namespace, grant, &who_am_i(client).await?).await
}

/// The user `client` authenticates as, by a SelfSubjectReview.
pub async fn who_am_i(client: &Client) -> Result<String, kube::Error> {
    let review = Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    Ok(review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default())
}

/// Creates `grant`'s RoleBinding in `namespace` for `username`, who `client` authenticates
/// as; one that exists already is left as it is.
pub async fn bind_as(
    client: &Client,
    namespace: &str,
    grant: Grant,
    username: &str,
) -> Result<(), kube::Error> {
    let binding = RoleBinding {
        metadata: ObjectMeta {
            name: Some(grant.binding.into()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: grant.cluster_role.into(),
        },
        subjects: Some(vec![subject_of(username)]),
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

/// The RBAC subject of an authenticated user name: a ServiceAccount's own form, so that
/// the confinement policy can name it.
fn subject_of(username: &str) -> Subject {
    match username
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
    {
        Some((namespace, name)) => Subject {
            kind: "ServiceAccount".into(),
            name: name.to_owned(),
            namespace: Some(namespace.to_owned()),
            ..Default::default()
        },
        None => Subject {
            kind: "User".into(),
            name: username.to_owned(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            ..Default::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_account_is_bound_as_one() {
        let subject = subject_of("system:serviceaccount:providers-system:providers-hub");
        assert_eq!(subject.kind, "ServiceAccount");
        assert_eq!(subject.name, "providers-hub");
        assert_eq!(subject.namespace.as_deref(), Some("providers-system"));
    }

    #[test]
    fn another_identity_is_bound_as_a_user() {
        let subject = subject_of("edge-admin");
        assert_eq!(subject.kind, "User");
        assert_eq!(subject.name, "edge-admin");
        assert_eq!(subject.namespace, None);
    }
}
