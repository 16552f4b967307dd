//! The caller's own permissions, asked of the API server with a SelfSubjectAccessReview on
//! the exact object: the same questions the webhook asks with a SubjectAccessReview
//! (`install` on an edge, `use` of a recipe).

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::{Api, Client, api::PostParams};
use providers_shared::api::GROUP;
use serde_json::json;

use crate::report::report;

/// The API server's answer to "may I do this?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    Allowed {
        reason: String,
    },
    Denied {
        reason: String,
    },
    /// The question itself failed; the text says why.
    Unknown {
        error: String,
    },
}

impl Access {
    pub fn word(&self) -> &'static str {
        match self {
            Access::Allowed { .. } => "yes",
            Access::Denied { .. } => "no",
            Access::Unknown { .. } => "unknown",
        }
    }

    pub fn json(&self) -> serde_json::Value {
        match self {
            Access::Allowed { reason } => json!({ "allowed": true, "reason": reason }),
            Access::Denied { reason } => json!({ "allowed": false, "reason": reason }),
            Access::Unknown { error } => json!({ "allowed": null, "error": error }),
        }
    }
}

/// Asks the API server, with a SelfSubjectAccessReview, whether the caller may `verb` the
/// object `resource/name` of the API group.
pub async fn ask(client: &Client, resource: &str, verb: &str, name: String) -> Access {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(GROUP.to_owned()),
                resource: Some(resource.to_owned()),
                verb: Some(verb.to_owned()),
                name: Some(name),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    match api.create(&PostParams::default(), &review).await {
        Ok(answer) => {
            let status = answer.status.unwrap_or_default();
            let reason = status.reason.unwrap_or_default();
            if status.allowed {
                Access::Allowed { reason }
            } else {
                Access::Denied { reason }
            }
        }
        Err(error) => Access::Unknown {
            error: report(&error.into(), None).message,
        },
    }
}
