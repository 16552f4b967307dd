//! What a request to the API double asks: the verb, the object or collection its path
//! names, and the few query parameters the installer sends.

use std::collections::BTreeMap;

use http::Method;
use serde_json::Value;

/// Where an object lives: its API group and version (`v1`, `batch/v1`), its resource's
/// plural, its namespace (empty for cluster-scoped objects) and its name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub api: String,
    pub plural: String,
    pub namespace: String,
    pub name: String,
}

/// One request as the double reads it.
#[derive(Debug)]
pub struct Asked {
    pub verb: Verb,
    /// The object (`name` set) or collection (`name` empty) the path names.
    pub key: Key,
    /// `status`, `token`, `log`, ... when the path names a subresource.
    pub subresource: Option<String>,
    pub query: BTreeMap<String, String>,
    /// The request's `Content-Type`, which says how a PATCH is meant.
    pub content_type: String,
}

/// The verbs the double tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    /// A GET of a group's or version's resource list (discovery).
    Discover,
    Create,
    Replace,
    Patch,
    Delete,
}

impl Verb {
    /// How the request log spells it.
    pub fn word(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::List => "LIST",
            Verb::Watch => "WATCH",
            Verb::Discover => "DISCOVER",
            Verb::Create => "POST",
            Verb::Replace => "PUT",
            Verb::Patch => "PATCH",
            Verb::Delete => "DELETE",
        }
    }
}

/// Reads `method` and `uri` as the Kubernetes API lays its paths out; `None` for a path it
/// does not lay out so (the double answers 404).
pub fn asked(method: &Method, uri: &http::Uri, content_type: &str) -> Option<Asked> {
    let query = query_of(uri.query().unwrap_or_default());
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let (api, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ((*version).to_owned(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        // `namespaces/<ns>/<plural>...`, but not a Namespace's own subresource.
        ["namespaces", namespace, plural, rest @ ..] if !is_namespace_subresource(plural) => {
            ((*namespace).to_owned(), [&[*plural][..], rest].concat())
        }
        rest => (String::new(), rest.to_vec()),
    };
    let (plural, name, subresource) = match namespace_free(&rest) {
        Some(parts) => parts,
        None if rest.is_empty() => {
            let verb = if *method == Method::GET {
                Verb::Discover
            } else {
                return None;
            };
            return Some(Asked {
                verb,
                key: Key {
                    api,
                    plural: String::new(),
                    namespace,
                    name: String::new(),
                },
                subresource: None,
                query,
                content_type: content_type.to_owned(),
            });
        }
        None => return None,
    };
    let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    let verb = match (method.as_str(), name.is_empty()) {
        ("GET", true) if watch => Verb::Watch,
        ("GET", true) => Verb::List,
        ("GET", false) => Verb::Get,
        ("POST", _) => Verb::Create,
        ("PUT", false) => Verb::Replace,
        ("PATCH", false) => Verb::Patch,
        ("DELETE", false) => Verb::Delete,
        _ => return None,
    };
    Some(Asked {
        verb,
        key: Key {
            api,
            plural,
            namespace,
            name,
        },
        subresource,
        query,
        content_type: content_type.to_owned(),
    })
}

fn is_namespace_subresource(segment: &str) -> bool {
    matches!(segment, "status" | "finalize")
}

/// `<plural>[/<name>[/<subresource>]]`.
fn namespace_free(rest: &[&str]) -> Option<(String, String, Option<String>)> {
    match rest {
        [plural] => Some(((*plural).to_owned(), String::new(), None)),
        [plural, name] => Some(((*plural).to_owned(), (*name).to_owned(), None)),
        [plural, name, sub] => Some((
            (*plural).to_owned(),
            (*name).to_owned(),
            Some((*sub).to_owned()),
        )),
        _ => None,
    }
}

/// The query's parameters, percent-decoded.
fn query_of(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decoded(key), decoded(value))
        })
        .collect()
}

fn decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'%' if at + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[at + 1..at + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(byte) => {
                        out.push(byte);
                        at += 3;
                    }
                    None => {
                        out.push(b'%');
                        at += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                at += 1;
            }
            byte => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The request's line in the log: verb, cluster, `resource/namespace/name`, subresource,
/// and what tells one request of a kind from another where the path does not (a list's
/// label selector, an Event's reason, what a SubjectAccessReview asks).
pub fn line_of(cluster: &str, asked: &Asked, body: &Value) -> String {
    let key = &asked.key;
    let text = |pointer: &str| body.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let mut path = key.plural.clone();
    if asked.verb == Verb::Discover {
        path = key.api.clone();
    }
    if !key.namespace.is_empty() {
        path = format!("{path}/{}", key.namespace);
    }
    let name = match (asked.verb, key.plural.as_str()) {
        // An Event's generated name says nothing; its reason does, below.
        (Verb::Create, "events") => "",
        (Verb::Create, _) if key.name.is_empty() => text("/metadata/name"),
        _ => key.name.as_str(),
    };
    if !name.is_empty() {
        path = format!("{path}/{name}");
    }
    let mut line = format!("{} {cluster} {path}", asked.verb.word());
    if let Some(subresource) = &asked.subresource {
        line = format!("{line} {subresource}");
    }
    let detail = match (asked.verb, key.plural.as_str()) {
        (Verb::List | Verb::Watch, _) => asked.query.get("labelSelector").cloned(),
        (Verb::Create, "events") => Some(text("/reason").to_owned()),
        (Verb::Create, "subjectaccessreviews") => Some(format!(
            "{} {}/{}",
            text("/spec/resourceAttributes/verb"),
            text("/spec/resourceAttributes/resource"),
            text("/spec/resourceAttributes/name"),
        )),
        _ => None,
    };
    match detail {
        Some(detail) if !detail.is_empty() => format!("{line} {detail}"),
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(method: Method, uri: &str) -> Asked {
        asked(&method, &uri.parse().unwrap(), "").unwrap()
    }

    #[test]
    fn paths_name_objects_collections_and_subresources() {
        let status = ask(
            Method::PATCH,
            "/apis/providers.platform.dev/v1alpha1/namespaces/org-a/workspaces/ws/status",
        );
        assert_eq!(status.verb, Verb::Patch);
        assert_eq!(status.key.api, "providers.platform.dev/v1alpha1");
        assert_eq!(
            (status.key.plural.as_str(), status.key.namespace.as_str()),
            ("workspaces", "org-a")
        );
        assert_eq!(status.subresource.as_deref(), Some("status"));
        let namespace = ask(Method::GET, "/api/v1/namespaces/demo");
        assert_eq!(namespace.verb, Verb::Get);
        assert_eq!(
            (namespace.key.plural.as_str(), namespace.key.name.as_str()),
            ("namespaces", "demo")
        );
        assert_eq!(namespace.key.namespace, "");
        let pods = ask(
            Method::GET,
            "/api/v1/namespaces/demo/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3Dj",
        );
        assert_eq!(pods.verb, Verb::List);
        assert_eq!(
            pods.query.get("labelSelector").map(String::as_str),
            Some("batch.kubernetes.io/job-name=j")
        );
        assert_eq!(ask(Method::GET, "/apis/batch/v1").verb, Verb::Discover);
    }
}
