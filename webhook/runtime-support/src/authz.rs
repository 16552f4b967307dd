//! RBAC questions asked as a user, by SubjectAccessReview: may this user `install` onto
//! this exact edge, and `use` this exact Recipe? The webhook asks when it seals a plan, the
//! installer again before it uses its edge credential for the attempt.

use std::time::Duration;

use k8s_openapi::api::{
    authentication::v1::UserInfo,
    authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec},
};
use kube::{Api, Client, api::PostParams};
use providers_shared::api::{GROUP, Owner};

/// The verb tenants are granted on `edges` with `resourceNames: [<edge>]`.
pub const INSTALL_VERB: &str = "install";
const TIMEOUT: Duration = Duration::from_secs(4);

/// Why RBAC gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum AuthorizationError {
    #[error("the SubjectAccessReview took longer than {} s", .0.as_secs())]
    TimedOut(Duration),
    /// The API server would not take the question (HTTP 413): the requester's identity
    /// alone is larger than its request limit, so asking again gets the same answer.
    #[error(
        "the API server refused the SubjectAccessReview as too large (HTTP 413): the requester's name, groups and extra attributes are more than it accepts; asking again cannot help: make the write as an identity with a shorter name and fewer groups"
    )]
    IdentityTooLarge,
    #[error("the SubjectAccessReview failed: {0}")]
    Failed(#[source] kube::Error),
}

impl From<kube::Error> for AuthorizationError {
    fn from(error: kube::Error) -> Self {
        match &error {
            kube::Error::Api(status) if status.code == 413 => AuthorizationError::IdentityTooLarge,
            _ => AuthorizationError::Failed(error),
        }
    }
}

/// RBAC's permission for one verb on one object (whether the user may), or why RBAC gave
/// none. (The webhook's answer to a review is `admission::answer::Answer`.)
pub type Permission = Result<bool, AuthorizationError>;

/// The permission as the shared decisions take it for a person who made a write: why there is
/// none, and whether trying again can help.
pub fn in_words(permission: Permission) -> Result<bool, String> {
    permission.map_err(|error| match error {
        AuthorizationError::IdentityTooLarge => error.to_string(),
        _ => format!("{error}; try again"),
    })
}

/// The permission as the shared decisions take it for the installer, which asks again by
/// itself: why there is none.
pub fn reason(permission: Permission) -> Result<bool, String> {
    permission.map_err(|error| error.to_string())
}

/// The verb tenants are granted on `recipes` (all of them, or `resourceNames: [<recipe>]`).
pub const USE_VERB: &str = "use";

/// Asks the API server whether `user` (name, UID, groups and extra, exactly as
/// authenticated) may install onto `edge`. Org membership grants nothing here: only RBAC on
/// that edge does.
pub async fn can_install(client: &Client, user: &UserInfo, edge: &str) -> Permission {
    may(client, user, "edges", INSTALL_VERB, edge).await
}

/// Asks the API server whether `user` may use the Recipe `recipe`: install what it
/// offers, on any edge they may install onto.
pub async fn can_use_recipe(client: &Client, user: &UserInfo, recipe: &str) -> Permission {
    may(client, user, "recipes", USE_VERB, recipe).await
}

/// The verb only the installer's identity is granted on `workspaces`: it may ask the
/// webhook for an automatic repair of a drifted release, sealed for the plan's owner.
pub const AUTOREPAIR_VERB: &str = "autorepair";

/// Asks the API server whether `user` may ask for an automatic repair of the Workspace
/// `namespace/name`.
pub async fn can_repair_automatically(
    client: &Client,
    user: &UserInfo,
    namespace: &str,
    name: &str,
) -> Permission {
    let mut workspace = attributes("workspaces", AUTOREPAIR_VERB, name);
    workspace.namespace = Some(namespace.to_owned());
    ask(client, user, workspace).await
}

/// One SubjectAccessReview: `verb` on `resource/name` in the API group, as `user`.
async fn may(
    client: &Client,
    user: &UserInfo,
    resource: &str,
    verb: &str,
    name: &str,
) -> Permission {
    ask(client, user, attributes(resource, verb, name)).await
}

/// `verb` on `resource/name` in the API group.
fn attributes(resource: &str, verb: &str, name: &str) -> ResourceAttributes {
    ResourceAttributes {
        group: Some(GROUP.to_owned()),
        resource: Some(resource.to_owned()),
        verb: Some(verb.to_owned()),
        name: Some(name.to_owned()),
        ..Default::default()
    }
}

/// One SubjectAccessReview of `attributes`, as `user`.
async fn ask(client: &Client, user: &UserInfo, attributes: ResourceAttributes) -> Permission {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
            resource_attributes: Some(attributes),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: Api<SubjectAccessReview> = Api::all(client.clone());
    let created = tokio::time::timeout(TIMEOUT, api.create(&PostParams::default(), &review))
        .await
        .map_err(|_| AuthorizationError::TimedOut(TIMEOUT))??;
    Ok(created.status.is_some_and(|s| s.allowed))
}

/// The user a plan's owner was when the plan was sealed.
pub fn user_of(owner: &Owner) -> UserInfo {
    let some = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
    UserInfo {
        username: Some(owner.username.clone()),
        uid: (!owner.uid.is_empty()).then(|| owner.uid.clone()),
        groups: some(&owner.groups),
        extra: (!owner.extra.is_empty()).then(|| owner.extra.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube_errors::answered;

    #[test]
    fn a_question_too_large_to_ask_says_that_asking_again_cannot_help() {
        let said = in_words(Err(answered(413).into())).unwrap_err();
        assert!(said.contains("HTTP 413"), "{said}");
        assert!(said.contains("asking again cannot help"), "{said}");
        assert!(!said.contains("try again"), "{said}");
    }

    #[test]
    fn any_other_failure_says_to_try_again() {
        let said = in_words(Err(answered(500).into())).unwrap_err();
        assert!(said.ends_with("; try again"), "{said}");
        let said = in_words(Err(AuthorizationError::TimedOut(TIMEOUT))).unwrap_err();
        assert!(said.ends_with("; try again"), "{said}");
    }
}
