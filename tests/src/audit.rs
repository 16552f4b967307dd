//! What the API server's audit log says of the hub's identity on an edge reading Secrets.
//!
//! Every test control plane writes an audit log (`audit.log` in its folder) with one
//! event per Secret request of that identity, request and response included, when the
//! request completes. A test reads it to prove what the installer fetched: a list of
//! metadata alone answers with a `PartialObjectMetadataList`, a list or get of the Secrets
//! themselves with their data. A watch's events are not in the log (the API server
//! audits the request, not what it streams); its list is.

use std::path::Path;

use anyhow::Context;
use serde::Deserialize;

/// The identity the hub's installer uses on an edge (`manifests/edge`).
pub const HUB_ON_EDGE_USER: &str = "system:serviceaccount:providers-system:providers-hub";

/// The audit log's file name in a control plane's folder.
pub const LOG_FILE: &str = "audit.log";

/// The audit policy every test control plane runs with: the hub identity's Secret
/// requests, with their responses, once complete; nothing else.
pub fn policy() -> String {
    format!(
        r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: RequestResponse
    users: ["{HUB_ON_EDGE_USER}"]
    resources:
      - group: ""
        resources: ["secrets"]
  - level: None
"#
    )
}

/// One Secret request of the hub's identity, as audited.
#[derive(Clone, Debug)]
pub struct SecretRequest {
    pub verb: String,
    pub request_uri: String,
    pub namespace: Option<String>,
    /// The Secret named, for a get (or a write).
    pub name: Option<String>,
    /// The kind of what the API server answered (`PartialObjectMetadataList`,
    /// `SecretList`, `Secret`, `Status`), when it answered with an object.
    pub response_kind: Option<String>,
    /// The HTTP status the API server answered with.
    pub response_code: Option<u16>,
    /// The audit event as logged, to search for what must never be in it.
    pub line: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    verb: String,
    #[serde(default, rename = "requestURI")]
    request_uri: String,
    user: User,
    object_ref: Option<ObjectRef>,
    response_object: Option<Kind>,
    response_status: Option<ResponseStatus>,
}

#[derive(Deserialize)]
struct ResponseStatus {
    code: Option<u16>,
}

#[derive(Deserialize)]
struct User {
    username: String,
}

#[derive(Deserialize)]
struct ObjectRef {
    resource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
}

#[derive(Deserialize)]
struct Kind {
    kind: Option<String>,
}

/// The hub identity's Secret requests in `namespace` from the audit log `text`.
pub fn secret_requests_in(text: &str, namespace: &str) -> anyhow::Result<Vec<SecretRequest>> {
    let mut found = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let event: Event = serde_json::from_str(line)
            .with_context(|| format!("an audit event: {}", truncated(line)))?;
        let Some(object) = event.object_ref else {
            continue;
        };
        if event.user.username != HUB_ON_EDGE_USER
            || object.resource.as_deref() != Some("secrets")
            || object.namespace.as_deref() != Some(namespace)
        {
            continue;
        }
        found.push(SecretRequest {
            verb: event.verb,
            request_uri: event.request_uri,
            namespace: object.namespace,
            name: object.name,
            response_kind: event.response_object.and_then(|r| r.kind),
            response_code: event.response_status.and_then(|s| s.code),
            line: line.to_owned(),
        });
    }
    Ok(found)
}

/// The hub identity's Secret requests in `namespace`, from the audit log of the control
/// plane in `plane_dir`.
pub fn secret_requests(plane_dir: &Path, namespace: &str) -> anyhow::Result<Vec<SecretRequest>> {
    let path = plane_dir.join(LOG_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the audit log {}", path.display()))?;
    secret_requests_in(&text, namespace)
}

fn truncated(line: &str) -> &str {
    match line.char_indices().nth(200) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(verb: &str, namespace: &str, name: Option<&str>, response: &str) -> String {
        serde_json::json!({
            "kind": "Event",
            "verb": verb,
            "requestURI": format!("/api/v1/namespaces/{namespace}/secrets"),
            "user": {"username": HUB_ON_EDGE_USER},
            "objectRef": {"resource": "secrets", "namespace": namespace, "name": name},
            "responseObject": {"kind": response},
        })
        .to_string()
    }

    #[test]
    fn a_metadata_list_and_a_full_get_are_told_apart() {
        let log = [
            event("list", "team", None, "PartialObjectMetadataList"),
            event("get", "team", Some("token"), "Secret"),
            event("list", "elsewhere", None, "SecretList"),
            serde_json::json!({
                "verb": "list",
                "user": {"username": "alice"},
                "objectRef": {"resource": "secrets", "namespace": "team"},
            })
            .to_string(),
        ]
        .join("\n");
        let found = secret_requests_in(&log, "team").expect("parsed");
        let seen: Vec<_> = found
            .iter()
            .map(|r| {
                (
                    r.verb.as_str(),
                    r.name.as_deref(),
                    r.response_kind.as_deref(),
                )
            })
            .collect();
        assert_eq!(found[0].request_uri, "/api/v1/namespaces/team/secrets");
        assert_eq!(
            seen,
            [
                ("list", None, Some("PartialObjectMetadataList")),
                ("get", Some("token"), Some("Secret")),
            ]
        );
    }

    #[test]
    fn the_policy_names_the_hub_identity() {
        assert!(policy().contains(HUB_ON_EDGE_USER));
    }
}
