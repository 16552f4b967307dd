//! An in-memory Kubernetes API server for unit tests: a tower `Service` that a real
//! `kube::Client` is built on (`Client::new`), so the code under test makes its requests
//! as it does against a cluster, and the test reads back every request, in order, as one
//! short line (`PATCH hub workspaces/org-a/ws status`).
//!
//! It stores objects by group/version, resource, namespace and name, and answers GET,
//! LIST (label selectors), POST, PUT, PATCH (JSON patch with its `test` operations, merge
//! and strategic merge patches as merges, server-side apply as a merge of the body),
//! DELETE (preconditions, finalizers holding the deletion), the `status` subresource,
//! SelfSubjectReviews, SubjectAccessReviews, ServiceAccount tokens and discovery. A watch is answered with an empty stream, which ends at once. Told to, it
//! fails every request from some request on: refused (as a connection is when the API
//! server is down) or answered 503.
//!
//! What it does not do: no admission (webhooks, CRD schemas, defaulting), no controllers
//! (no garbage collection of dependents, no namespace deletion of contents, no Job or Pod
//! lifecycle: a test writes the status a controller would), no RBAC (every SubjectAccessReview
//! is allowed), no Pod logs, no field managers, and no strategic merge of lists by key.

use std::{
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
};

use http::{Request, Response};
use kube::{Client, Resource, client::Body};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use tower::{BoxError, Service};

use providers_runtime::locks::Locked;

mod answer;
mod request;
mod reviews;
mod store;
mod tests;

use answer::Answer;
pub use request::Key;
use request::{Asked, Verb, asked, line_of};
use reviews::Reviewer;
use store::{Store, selected};

/// How the double fails once told to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No answer: the connection is refused, as when the API server is down.
    Refused,
    /// An answer: 503 Service Unavailable.
    Unavailable,
}

/// One API server in memory. Cloning shares it.
#[derive(Clone)]
pub struct ApiDouble {
    state: Arc<Mutex<State>>,
}

struct State {
    /// The name the request log gives it (`hub`, `edge`).
    cluster: String,
    store: Store,
    reviewer: Reviewer,
    /// Every request, one line each: this double's, and those of the doubles beside it.
    log: Arc<Mutex<Vec<String>>>,
    /// How many requests this double was sent.
    requests: usize,
    /// From which of its requests (counted from 0) on every request fails, and how.
    failing: Option<(usize, Failure)>,
}

impl ApiDouble {
    /// An empty API server named `cluster` in the request log, whose client authenticates
    /// as `user` and whom RBAC allows everything asked in a SubjectAccessReview.
    pub fn new(cluster: &str, user: &str) -> Self {
        Self::logging_to(Arc::default(), cluster, user)
    }

    /// Another API server, named `cluster`, whose requests go into this one's log: the
    /// order of the requests to both shows.
    pub fn beside(&self, cluster: &str, user: &str) -> Self {
        let log = self.state.locked().log.clone();
        Self::logging_to(log, cluster, user)
    }

    fn logging_to(log: Arc<Mutex<Vec<String>>>, cluster: &str, user: &str) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                cluster: cluster.to_owned(),
                store: Store::new(cluster),
                reviewer: Reviewer {
                    user: user.to_owned(),
                    allowed: true,
                },
                log,
                requests: 0,
                failing: None,
            })),
        }
    }

    /// A client of this API server.
    pub fn client(&self) -> Client {
        Client::new(self.clone(), "default")
    }

    /// Stores `object` as it is (with a UID, resourceVersion and creation time when it has
    /// none), without a request: how a test sets the scene. Returns it as stored.
    pub fn put<K>(&self, object: &K) -> K
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let key = key_of(object);
        let value = serde_json::to_value(object).expect("a Kubernetes object serializes");
        let stored = self.state.locked().store.put(key, value);
        serde_json::from_value(stored).expect("what was stored reads back")
    }

    /// The stored `K` named `name` in `namespace` (empty for cluster-scoped kinds).
    pub fn get<K>(&self, namespace: &str, name: &str) -> Option<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let key = key_for::<K>(namespace, name);
        let value = self.state.locked().store.get(&key).cloned()?;
        Some(serde_json::from_value(value).expect("a stored object reads back"))
    }

    /// Every stored `K`, in every namespace, by namespace and name.
    pub fn all<K>(&self) -> Vec<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let collection = key_for::<K>("", "");
        let state = self.state.locked();
        state
            .store
            .under(&collection)
            .map(|(_, value)| {
                serde_json::from_value(value.clone()).expect("a stored object reads back")
            })
            .collect()
    }

    /// Changes the stored `K` without a request, as another client or a controller would
    /// (a new resourceVersion, nothing logged); returns it as changed.
    pub fn edit<K>(&self, namespace: &str, name: &str, change: impl FnOnce(&mut K)) -> Option<K>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let key = key_for::<K>(namespace, name);
        let mut state = self.state.locked();
        let edited = state.store.edit(&key, |value| {
            let mut object: K =
                serde_json::from_value(value.clone()).expect("a stored object reads back");
            change(&mut object);
            *value = serde_json::to_value(&object).expect("a Kubernetes object serializes");
        })?;
        Some(serde_json::from_value(edited).expect("a stored object reads back"))
    }

    /// After `answered` more requests, every request fails as `failure` says.
    pub fn fail_after(&self, answered: usize, failure: Failure) {
        let mut state = self.state.locked();
        let from = state.requests + answered;
        state.failing = Some((from, failure));
    }

    /// Answers every request again.
    pub fn recover(&self) {
        self.state.locked().failing = None;
    }

    /// The requests made since the last call, to this double and those beside it, one
    /// line each, in order.
    pub fn take_requests(&self) -> Vec<String> {
        let log = self.state.locked().log.clone();
        std::mem::take(&mut *log.locked())
    }
}

impl State {
    /// Answers one request and logs it; `Err` when it fails unanswered.
    fn answer(&mut self, asked: Option<Asked>, body: &[u8]) -> Result<Answer, Failure> {
        let body: Value = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(body).unwrap_or(Value::Null)
        };
        let line = match &asked {
            Some(asked) => line_of(&self.cluster, asked, &body),
            None => format!("? {}", self.cluster),
        };
        let this = self.requests;
        self.requests += 1;
        if let Some((from, failure)) = self.failing
            && this >= from
        {
            self.log.locked().push(match failure {
                Failure::Refused => format!("{line} -> refused"),
                Failure::Unavailable => format!("{line} -> 503"),
            });
            return match failure {
                Failure::Refused => Err(failure),
                Failure::Unavailable => Ok(Answer::status(
                    503,
                    "ServiceUnavailable",
                    "the server is currently unable to handle the request",
                )),
            };
        }
        let answer = match &asked {
            Some(asked) => self.answer_asked(asked, body),
            None => Answer::status(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ),
        };
        self.log.locked().push(match answer.code {
            code if code >= 400 => format!("{line} -> {code}"),
            _ => line,
        });
        Ok(answer)
    }

    fn answer_asked(&mut self, asked: &Asked, body: Value) -> Answer {
        if let Some(answer) = reviews::answer(&self.reviewer, asked, &body) {
            return answer;
        }
        let store = &mut self.store;
        let key = &asked.key;
        let subresource = asked.subresource.as_deref();
        match asked.verb {
            Verb::Get => match store.get(key) {
                Some(object) => Answer::ok(object.clone()),
                None => Answer::status(
                    404,
                    "NotFound",
                    &format!("{} \"{}\" not found", key.plural, key.name),
                ),
            },
            Verb::List => {
                let labels = asked.query.get("labelSelector").map(String::as_str);
                let name = asked
                    .query
                    .get("fieldSelector")
                    .and_then(|f| f.strip_prefix("metadata.name="));
                let items: Vec<Value> = store
                    .under(key)
                    .filter(|(found, object)| {
                        labels.is_none_or(|s| selected(object.pointer("/metadata/labels"), s))
                            && name.is_none_or(|n| found.name == n)
                    })
                    .map(|(_, object)| object.clone())
                    .collect();
                Answer::ok(serde_json::json!({
                    "apiVersion": "v1",
                    "kind": "List",
                    "metadata": {"resourceVersion": store.version().to_string()},
                    "items": items,
                }))
            }
            // An empty stream, which ends at once: a watcher lists again after its backoff.
            Verb::Watch => Answer::ok(Value::String(String::new())),
            Verb::Create => store.create(key, body),
            Verb::Replace => store.replace(key, subresource, body),
            Verb::Patch => store.patch(key, subresource, &asked.content_type, body),
            Verb::Delete => store.delete(key, &body),
            Verb::Discover => Answer::status(404, "NotFound", "not served"),
        }
    }
}

fn key_of<K: Resource<DynamicType = ()>>(object: &K) -> Key {
    let meta = object.meta();
    key_for::<K>(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

fn key_for<K: Resource<DynamicType = ()>>(namespace: &str, name: &str) -> Key {
    Key {
        api: K::api_version(&()).into_owned(),
        plural: K::plural(&()).into_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}

impl Service<Request<Body>> for ApiDouble {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let state = self.state.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let content_type = parts
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let body = body.collect_bytes().await?;
            let asked = asked(&parts.method, &parts.uri, &content_type);
            let answer = state.locked().answer(asked, &body);
            let answer = answer.map_err(|failure| -> BoxError {
                format!("connection refused ({failure:?}: the API double is told to fail)").into()
            })?;
            let bytes = match answer.body {
                Value::String(text) => text.into_bytes(),
                json => serde_json::to_vec(&json)?,
            };
            Ok(Response::builder()
                .status(answer.code)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Body::from(bytes))?)
        })
    }
}
