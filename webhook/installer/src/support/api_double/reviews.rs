//! What the API double answers without storing anything: the reviews (who the client is,
//! what RBAC allows), a ServiceAccount's token, and discovery.

use serde_json::{Value, json};

use super::{
    answer::Answer,
    request::{Asked, Verb},
};

/// What the reviews are answered with.
pub struct Reviewer {
    /// The user a SelfSubjectReview says the client authenticates as.
    pub user: String,
    /// RBAC's answer to every SubjectAccessReview.
    pub allowed: bool,
}

/// The answer to `asked` when it is one of these; `None` for a request of stored objects.
pub fn answer(reviewer: &Reviewer, asked: &Asked, body: &Value) -> Option<Answer> {
    let key = &asked.key;
    match (
        asked.verb,
        key.plural.as_str(),
        asked.subresource.as_deref(),
    ) {
        (Verb::Create, "selfsubjectreviews", None) => Some(Answer::created(json!({
            "apiVersion": key.api,
            "kind": "SelfSubjectReview",
            "metadata": {},
            "status": {"userInfo": {"username": reviewer.user}},
        }))),
        (Verb::Create, "subjectaccessreviews", None) => {
            let mut review = body.clone();
            review["status"] = json!({"allowed": reviewer.allowed});
            Some(Answer::created(review))
        }
        (Verb::Create, "serviceaccounts", Some("token")) => {
            let mut request = body.clone();
            request["status"] = json!({
                "token": format!("token-of-{}", key.name),
                "expirationTimestamp": "2100-01-01T00:00:00Z",
            });
            Some(Answer::created(request))
        }
        (Verb::Discover, _, _) => Some(discovery(&key.api)),
        _ => None,
    }
}

/// The resources of `api` (`v1`, `apps/v1`) that the installer's releases and attempts
/// make, as discovery lists them.
fn discovery(api: &str) -> Answer {
    let resources: &[(&str, &str, bool)] = match api {
        "v1" => &[
            ("namespaces", "Namespace", false),
            ("configmaps", "ConfigMap", true),
            ("secrets", "Secret", true),
            ("serviceaccounts", "ServiceAccount", true),
            ("services", "Service", true),
            ("pods", "Pod", true),
        ],
        "apps/v1" => &[("deployments", "Deployment", true)],
        "batch/v1" => &[("jobs", "Job", true)],
        "rbac.authorization.k8s.io/v1" => &[
            ("roles", "Role", true),
            ("rolebindings", "RoleBinding", true),
        ],
        _ => return Answer::status(404, "NotFound", &format!("{api} is not served")),
    };
    let listed: Vec<Value> = resources
        .iter()
        .map(|(plural, kind, namespaced)| {
            json!({
                "name": plural,
                "singularName": kind.to_lowercase(),
                "namespaced": namespaced,
                "kind": kind,
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            })
        })
        .collect();
    Answer::ok(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": api,
        "resources": listed,
    }))
}
