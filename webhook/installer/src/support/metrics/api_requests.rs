//! `providers_installer_api_requests_total{verb}`: the hub client's requests by Kubernetes
//! verb, counted by a tower layer as each is sent. The verb comes from the method, the
//! `watch` parameter and whether the path names a collection or an object: a bounded set.

use std::task::{Context, Poll};

use http::{Method, Request};
use prometheus_client::metrics::{counter::Counter, family::Family};

use super::VerbLabels;

/// The Kubernetes verb of a request to the API (`get`, `list`, `watch`, `create`, `update`,
/// `patch`, `delete`, `deletecollection`), or `other` (discovery, `/version`).
pub fn verb<B>(request: &Request<B>) -> &'static str {
    let path = request.uri().path();
    let rest: Vec<&str> = if let Some(core) = path.strip_prefix("/api/v1/") {
        core.split('/').collect()
    } else if let Some(group) = path.strip_prefix("/apis/") {
        group.split('/').skip(2).collect()
    } else {
        return "other";
    };
    let rest: Vec<&str> = rest.into_iter().filter(|s| !s.is_empty()).collect();
    if rest.is_empty() {
        return "other";
    }
    // namespaces/NS/RESOURCE[/NAME[/SUB]] or RESOURCE[/NAME[/SUB]].
    let collection = matches!(rest.as_slice(), ["namespaces", _, _] | [_]);
    let watch = request
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    match *request.method() {
        Method::GET if watch => "watch",
        Method::GET if collection => "list",
        Method::GET => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if collection => "deletecollection",
        Method::DELETE => "delete",
        _ => "other",
    }
}

/// The layer to put on the hub client.
#[derive(Clone)]
pub struct CountRequests {
    pub counter: Family<VerbLabels, Counter>,
}

impl<S> tower::Layer<S> for CountRequests {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Counted {
            inner,
            counter: self.counter.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Counted<S> {
    inner: S,
    counter: Family<VerbLabels, Counter>,
}

impl<S, B> tower::Service<Request<B>> for Counted<S>
where
    S: tower::Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.counter
            .get_or_create(&VerbLabels {
                verb: verb(&request).to_owned(),
            })
            .inc();
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(method: Method, uri: &str) -> &'static str {
        verb(&Request::builder().method(method).uri(uri).body(()).unwrap())
    }

    #[test]
    fn verbs_from_method_path_and_watch() {
        let ws = "/apis/providers.platform.dev/v1alpha1";
        assert_eq!(
            of(Method::GET, &format!("{ws}/workspaces?limit=500")),
            "list"
        );
        assert_eq!(
            of(
                Method::GET,
                &format!("{ws}/workspaces?watch=true&resourceVersion=1")
            ),
            "watch"
        );
        assert_eq!(
            of(
                Method::GET,
                &format!("{ws}/namespaces/org-a/workspaces/web")
            ),
            "get"
        );
        assert_eq!(
            of(Method::GET, &format!("{ws}/namespaces/org-a/workspaces")),
            "list"
        );
        assert_eq!(
            of(
                Method::PATCH,
                &format!("{ws}/namespaces/org-a/workspaces/web/status")
            ),
            "patch"
        );
        assert_eq!(
            of(Method::POST, "/api/v1/namespaces/org-a/secrets"),
            "create"
        );
        assert_eq!(
            of(
                Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/p/leases/l"
            ),
            "update"
        );
        assert_eq!(
            of(Method::DELETE, "/api/v1/namespaces/org-a/secrets/s"),
            "delete"
        );
        assert_eq!(
            of(Method::DELETE, "/api/v1/namespaces/org-a/secrets"),
            "deletecollection"
        );
        assert_eq!(of(Method::GET, "/api/v1/namespaces"), "list");
        assert_eq!(of(Method::GET, "/api/v1/namespaces/org-a"), "get");
        assert_eq!(
            of(
                Method::POST,
                "/apis/authorization.k8s.io/v1/subjectaccessreviews"
            ),
            "create"
        );
        assert_eq!(of(Method::GET, "/version"), "other");
        assert_eq!(of(Method::GET, "/apis"), "other");
    }
}
