//! A metadata-only list-and-watch that holds almost nothing while it waits.
//!
//! The installer keeps thousands of watches on one edge (a namespace's Secrets and the
//! kinds its releases made, per release namespace), nearly all idle. kube's `watcher`
//! reads each watch through a line buffer of 8 KB that it never gives back, and keeps the
//! state of its request stack besides: measured on this machine, about 20 KB per idle
//! watch against under 1 KB here (ADR 39 and docs/performance.md). This stream gives
//! the same events as kube's `watcher` (so reflectors, `default_backoff` and the callers'
//! loops take it unchanged), reads the response body frame by frame, and keeps a partial
//! line only while one is arriving. Initial lists wait for a permit of the edge's
//! [`Lists`], so starting a thousand watches at once does not hold a thousand list
//! responses in memory at the same time.
//!
//! Reading an open watch's response into events is `metadata_events`.

use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use kube::{
    Client, Resource,
    api::{ListParams, WatchParams},
    client::Body,
    core::{PartialObjectMeta, Status},
    runtime::watcher::{Error, Event},
};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

use super::{
    metadata_decode,
    metadata_events::{Item, WatchState, read_events, read_to_end, watching},
};

/// How many initial lists of one edge run at once.
const LISTS_AT_ONCE: usize = 8;
/// Objects per page of an initial list: a page's text is held (about three times over,
/// while it arrives and is decoded) until its objects are trimmed, so this bounds a list's
/// memory beyond the objects it keeps. Measured on the demo with 2,000 Secrets of 250 KB
/// in one release namespace, at the installer's start: 100 a page peaked at 223 MB and
/// kept 174 MB; 20 a page peaked at 78 MB and kept 57 MB. Most namespaces fit one page.
const PAGE: u32 = 20;
/// How long the API server keeps one watch request open (kube's `watcher` asks for the
/// same); the watch then resumes from the last version it saw.
const WATCH_SECONDS: u32 = 290;

/// The permits for initial lists on one edge, shared by its watches.
#[derive(Clone)]
pub struct Lists(Arc<Semaphore>);

impl Default for Lists {
    fn default() -> Self {
        Self(Arc::new(Semaphore::new(LISTS_AT_ONCE)))
    }
}

/// The objects one watch brings: a collection and an optional label selector.
pub(super) struct Collection {
    /// The collection's path, e.g. `/api/v1/namespaces/team-a/secrets`.
    pub(super) url: String,
    pub(super) labels: Option<&'static str>,
}

/// Lists then watches the metadata of the objects of `collection`, giving kube `watcher`'s
/// events: `Init`, `InitApply` per object and `InitDone` for every (re)list, then `Apply`
/// and `Delete`; errors as `watcher::Error`, after which the stream goes on (wrap it in a
/// backoff, as kube's own).
pub(super) fn metadata_watch<K>(
    client: Client,
    collection: Collection,
    lists: Lists,
) -> impl Stream<Item = Item<K>> + Send + 'static
where
    K: Resource + Clone + DeserializeOwned + Send + Sync + 'static,
{
    let context = Arc::new((client, collection, lists));
    stream::unfold(WatchState::Empty, move |state| {
        let context = context.clone();
        async move {
            let (client, collection, lists) = &*context;
            Some(step::<K>(client, collection, lists, state).await)
        }
    })
    .flat_map(stream::iter)
}

/// One step: a whole list, the start of a watch, or the events of the next frames.
async fn step<K>(
    client: &Client,
    collection: &Collection,
    lists: &Lists,
    state: WatchState,
) -> (Vec<Item<K>>, WatchState)
where
    K: Resource + Clone + DeserializeOwned,
{
    match state {
        // The list and the start of a watch are boxed: a request's future is kilobytes,
        // and inline it would size every idle watch's task (see the module's comment).
        WatchState::Empty => match Box::pin(list::<K>(client, collection, lists)).await {
            Ok((objects, version)) => {
                let mut events = Vec::with_capacity(objects.len() + 2);
                events.push(Ok(Event::Init));
                events.extend(objects.into_iter().map(|o| Ok(Event::InitApply(o))));
                events.push(Ok(Event::InitDone));
                (events, watching(version, None))
            }
            Err(error) => (
                vec![Err(Error::InitialListFailed(error))],
                WatchState::Empty,
            ),
        },
        WatchState::Watching {
            version,
            body: None,
            ..
        } => match Box::pin(start_watch(client, collection, &version)).await {
            Ok(body) => (Vec::new(), watching(version, Some(body))),
            // The version is too old to watch from: list again.
            Err(kube::Error::Api(status)) if status.code == 410 => (
                vec![Err(Error::WatchStartFailed(kube::Error::Api(status)))],
                WatchState::Empty,
            ),
            Err(error) => (
                vec![Err(Error::WatchStartFailed(error))],
                watching(version, None),
            ),
        },
        WatchState::Watching {
            version,
            body: Some(body),
            opened,
            line,
        } => read_events(body, version, opened, line).await,
    }
}

/// Lists every page; the objects and the version to watch from.
async fn list<K>(
    client: &Client,
    collection: &Collection,
    lists: &Lists,
) -> Result<(Vec<PartialObjectMeta<K>>, String), kube::Error>
where
    K: Resource + Clone + DeserializeOwned,
{
    // The semaphore is never closed.
    let _permit = lists.0.acquire().await.ok();
    let request = kube::core::Request::new(&collection.url);
    // A consistent list, in pages: with "any version" (kube watcher's default) the API
    // server ignores the page size and sends the whole collection at once, and a writer
    // in the namespace decides how big that is (2,000 Secrets of 260 KB made one answer of
    // 522 MB). Kubernetes 1.34 and later serve consistent lists and their pages from the
    // watch cache too; older servers read them from etcd.
    let mut params = ListParams::default().limit(PAGE);
    if let Some(labels) = collection.labels {
        params = params.labels(labels);
    }
    let mut objects = Vec::new();
    loop {
        // Read as text and decoded here: kube's `request` logs a body it cannot decode
        // whole, and this one holds other writers' annotations (a Secret's last applied
        // configuration among them) that the installer must not keep, in logs or elsewhere.
        let text = client
            .request_text(
                request
                    .list_metadata(&params)
                    .map_err(kube::Error::BuildRequest)?,
            )
            .await?;
        let page = metadata_decode::page::<K>(&text).map_err(kube::Error::SerdeError)?;
        drop(text);
        if page.unreadable > 0 {
            tracing::warn!(
                collection = %collection.url,
                objects = page.unreadable,
                "objects of a list of the edge could not be read; they are skipped"
            );
        }
        objects.extend(page.items);
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => {
                let version = page.metadata.resource_version.unwrap_or_default();
                return Ok((objects, version));
            }
        }
    }
}

/// Opens a watch from `version`; the response body, or the API server's refusal.
async fn start_watch(
    client: &Client,
    collection: &Collection,
    version: &str,
) -> Result<Body, kube::Error> {
    // Bookmarks are asked for by default: an idle watch's version stays recent.
    let mut params = WatchParams::default().timeout(WATCH_SECONDS);
    if let Some(labels) = collection.labels {
        params = params.labels(labels);
    }
    let mut request = kube::core::Request::new(&collection.url)
        .watch_metadata(&params, version)
        .map_err(kube::Error::BuildRequest)?;
    // Kubernetes 1.37 compresses watch streams one gzip member per event; this reader
    // takes the events as they come.
    request.headers_mut().insert(
        http::header::ACCEPT_ENCODING,
        http::HeaderValue::from_static("identity"),
    );
    let response = client.send(request.map(Body::from)).await?;
    let code = response.status();
    if code.is_success() {
        return Ok(response.into_body());
    }
    let text = read_to_end(response.into_body()).await;
    let status = serde_json::from_slice::<Status>(&text).unwrap_or_else(|_| {
        Status::failure(&String::from_utf8_lossy(&text), "the watch was refused")
            .with_code(code.as_u16())
    });
    Err(kube::Error::Api(status.boxed()))
}
