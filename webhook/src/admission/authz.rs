//! Authorization of a new attempt: may this user `install` onto this exact edge?

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::{Api, Client, api::PostParams};
use providers::api::GROUP;

/// The verb tenants are granted on `edges` with `resourceNames: [<edge>]`.
pub const INSTALL_VERB: &str = "install";
const TIMEOUT: Duration = Duration::from_secs(4);

/// Asks the API server, by SubjectAccessReview for the requesting user (name, UID, groups
/// and extra, exactly as the AdmissionRequest carries them), whether they may install onto
/// `edge`. Org membership grants nothing here: only RBAC on that edge does.
pub async fn can_install(
    client: &Client,
    user: &k8s_openapi::api::authentication::v1::UserInfo,
    edge: &str,
) -> Result<bool, String> {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
            resource_attributes: Some(ResourceAttributes {
                group: Some(GROUP.to_owned()),
                resource: Some("edges".to_owned()),
                verb: Some(INSTALL_VERB.to_owned()),
                name: Some(edge.to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: Api<SubjectAccessReview> = Api::all(client.clone());
    let created = tokio::time::timeout(TIMEOUT, api.create(&PostParams::default(), &review))
        .await
        .map_err(|_| {
            format!(
                "the SubjectAccessReview took longer than {} s",
                TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("the SubjectAccessReview failed: {e}"))?;
    Ok(created.status.is_some_and(|s| s.allowed))
}
