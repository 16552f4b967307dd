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

use std::{
    pin::Pin,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::{Stream, StreamExt, stream};
use hyper::body::Body as _;
use kube::{
    Client, Resource,
    api::{ListParams, WatchParams},
    client::Body,
    core::{PartialObjectMeta, Status, WatchEvent},
    runtime::watcher::{Error, Event},
};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

use super::metadata_decode::{self, Line};

/// How many initial lists of one edge run at once.
const LISTS_AT_ONCE: usize = 8;
/// Objects per page of an initial list: a page's text is held (about three times over,
/// while it arrives and is decoded) until its objects are trimmed, so this bounds a list's
/// memory beyond the objects it keeps. Measured on the demo with 2,000 Secrets of 250 KB
/// in one release namespace, at the installer's start: 100 a page peaked at 223 MB and
/// kept 174 MB; 20 a page peaked at 78 MB and kept 57 MB. Most namespaces fit one page.
const PAGE: u32 = 20;
/// The longest watch event accepted. The API server stores objects of up to about 1.5 MB,
/// and its JSON escapes some characters sixfold (`<` as `\u003c`), so a legitimate event
/// stays under 10 MB; a line longer than this is a broken server, and the watch lists
/// again instead of growing. (At 4 MiB, a Secret with a long owner name could be written
/// past the cap by anyone in the namespace, and every write of it forced a relist.)
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// How long the API server keeps one watch request open (kube's `watcher` asks for the
/// same); the watch then resumes from the last version it saw.
const WATCH_SECONDS: u32 = 290;
/// A watch that ends sooner than this is treated as failed, so the backoff paces the next
/// one: a server (or a proxy) that answers every watch and closes it at once would
/// otherwise keep the installer asking again in a loop.
const SHORTEST_WATCH: Duration = Duration::from_secs(1);

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

enum WatchState {
    /// Lists (again) before watching.
    Empty,
    /// Listed or watched up to `version`; `body` is the open watch, if any, answered at
    /// `opened`.
    Watching {
        version: String,
        body: Option<Body>,
        opened: Instant,
        line: Vec<u8>,
    },
}

type Item<K> = Result<Event<PartialObjectMeta<K>>, Error>;

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

fn watching(version: String, body: Option<Body>) -> WatchState {
    WatchState::Watching {
        version,
        body,
        opened: Instant::now(),
        line: Vec::new(),
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

/// An error response's body, at most a page of it.
async fn read_to_end(mut body: Body) -> Vec<u8> {
    let mut bytes = Vec::new();
    while let Some(Ok(frame)) = next_frame(&mut body).await {
        if let Ok(data) = frame.into_data() {
            bytes.extend_from_slice(&data);
        }
        if bytes.len() > 64 * 1024 {
            break;
        }
    }
    bytes
}

async fn next_frame(
    body: &mut Body,
) -> Option<Result<hyper::body::Frame<hyper::body::Bytes>, kube::Error>> {
    std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
}

/// Reads frames until they complete at least one event, or the watch ends.
async fn read_events<K>(
    mut body: Body,
    mut version: String,
    opened: Instant,
    mut line: Vec<u8>,
) -> (Vec<Item<K>>, WatchState)
where
    K: Resource + Clone + DeserializeOwned,
{
    loop {
        let data = match next_frame(&mut body).await {
            // The API server ended the watch (its timeout): resume from the last version.
            None if opened.elapsed() >= SHORTEST_WATCH => {
                return (Vec::new(), watching(version, None));
            }
            None => {
                let status = Status::failure(
                    "the edge's API server ended a watch as soon as it answered it",
                    "WatchEndedAtOnce",
                );
                return (
                    vec![Err(Error::WatchFailed(kube::Error::Api(status.boxed())))],
                    watching(version, None),
                );
            }
            Some(Err(error)) => {
                return (
                    vec![Err(Error::WatchFailed(error))],
                    watching(version, None),
                );
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
        };
        line.extend_from_slice(&data);
        let mut events = Vec::new();
        let mut relist = false;
        let mut start = 0;
        while let Some(end) = line[start..].iter().position(|b| *b == b'\n') {
            let event = &line[start..start + end];
            start += end + 1;
            if event.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let Some(event) = decode::<K>(event, &mut version) else {
                continue;
            };
            let gone = is_gone(&event);
            events.push(event);
            if gone {
                relist = true;
                break;
            }
        }
        if relist {
            return (events, WatchState::Empty);
        }
        line.drain(..start);
        if line.len() > MAX_EVENT_BYTES {
            let status = Status::failure(
                "a watch event was longer than the installer accepts",
                "EventTooLarge",
            );
            events.push(Err(Error::WatchError(status.boxed())));
            return (events, WatchState::Empty);
        }
        if line.is_empty() {
            // Idle watches hold no buffer.
            line = Vec::new();
        }
        if !events.is_empty() {
            return (
                events,
                WatchState::Watching {
                    version,
                    body: Some(body),
                    opened,
                    line,
                },
            );
        }
    }
}

/// The version to watch from is gone (compacted away): list again.
fn is_gone<K>(item: &Item<K>) -> bool {
    matches!(item, Err(Error::WatchError(status)) if status.code == 410)
}

/// One line of a watch: its event, or nothing for a bookmark (which only moves `version`).
/// A line whose object cannot be decoded is skipped with a warning (after
/// `metadata_decode`'s fallbacks, only a broken server sends one).
fn decode<K>(event: &[u8], version: &mut String) -> Option<Item<K>>
where
    K: Resource + Clone + DeserializeOwned,
{
    let event = match metadata_decode::event::<K>(event) {
        Line::Event(event) => *event,
        Line::Malformed(error) => {
            return Some(Err(Error::WatchFailed(kube::Error::SerdeError(error))));
        }
        Line::UnreadableObject => {
            tracing::warn!(
                "a watch event of the edge held an object that could not be read; it is skipped"
            );
            return None;
        }
    };
    let mut moved = |object: &PartialObjectMeta<K>| {
        if let Some(at) = &object.metadata.resource_version {
            version.clone_from(at);
        }
    };
    match event {
        WatchEvent::Added(object) | WatchEvent::Modified(object) => {
            moved(&object);
            Some(Ok(Event::Apply(object)))
        }
        WatchEvent::Deleted(object) => {
            moved(&object);
            Some(Ok(Event::Delete(object)))
        }
        WatchEvent::Bookmark(bookmark) => {
            version.clone_from(&bookmark.metadata.resource_version);
            None
        }
        WatchEvent::Error(status) => Some(Err(Error::WatchError(status))),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Secret;

    use super::*;

    fn decoded(line: &str, version: &mut String) -> Option<Item<Secret>> {
        decode::<Secret>(line.as_bytes(), version)
    }

    #[test]
    fn an_event_moves_the_version_and_a_bookmark_only_moves_it() {
        let mut version = "1".to_owned();
        let added = r#"{"type":"ADDED","object":{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"a","namespace":"n","resourceVersion":"7"}}}"#;
        assert!(matches!(
            decoded(added, &mut version),
            Some(Ok(Event::Apply(o))) if o.metadata.name.as_deref() == Some("a")
        ));
        assert_eq!(version, "7");
        let bookmark = r#"{"type":"BOOKMARK","object":{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"resourceVersion":"9"}}}"#;
        assert!(decoded(bookmark, &mut version).is_none());
        assert_eq!(version, "9");
        let deleted = added.replace("ADDED", "DELETED").replace("\"7\"", "\"10\"");
        assert!(matches!(
            decoded(&deleted, &mut version),
            Some(Ok(Event::Delete(_)))
        ));
        assert_eq!(version, "10");
    }

    #[tokio::test]
    async fn events_are_read_across_frames_and_a_watch_ended_at_once_is_a_failure() {
        let added = r#"{"type":"ADDED","object":{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"a","namespace":"n","resourceVersion":"7"}}}"#;
        let bookmark = r#"{"type":"BOOKMARK","object":{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"resourceVersion":"9"}}}"#;
        // A line split across the end of the frame stays buffered until its end arrives.
        let body = Body::from(format!("{added}\n{bookmark}\n{{\"type\":").into_bytes());
        let (events, state) =
            read_events::<Secret>(body, "1".to_owned(), Instant::now(), Vec::new()).await;
        assert!(matches!(events.as_slice(), [Ok(Event::Apply(_))]));
        let WatchState::Watching {
            version,
            body: Some(body),
            opened,
            line,
        } = state
        else {
            panic!("still watching");
        };
        assert_eq!(version, "9", "the bookmark moved the version");
        assert_eq!(line, b"{\"type\":", "the partial line is kept");

        // The body ends at once: a failure, so that the backoff paces the next watch.
        let (events, state) = read_events::<Secret>(body, version, opened, line).await;
        assert!(matches!(events.as_slice(), [Err(Error::WatchFailed(_))]));
        assert!(matches!(state, WatchState::Watching { body: None, .. }));

        // A watch that ran its course ends quietly and resumes from its version.
        let old = Instant::now() - SHORTEST_WATCH;
        let (events, state) =
            read_events::<Secret>(Body::empty(), "9".to_owned(), old, Vec::new()).await;
        assert!(events.is_empty());
        assert!(
            matches!(state, WatchState::Watching { version, body: None, .. } if version == "9")
        );
    }

    #[test]
    fn a_gone_version_lists_again_and_other_errors_do_not() {
        let mut version = "1".to_owned();
        let gone = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}}"#;
        assert!(decoded(gone, &mut version).is_some_and(|e| is_gone(&e)));
        let other = gone.replace("410", "500");
        assert!(decoded(&other, &mut version).is_some_and(|e| !is_gone(&e) && e.is_err()));
        assert!(matches!(
            decoded("{not json", &mut version),
            Some(Err(Error::WatchFailed(_)))
        ));
        assert_eq!(version, "1");
    }
}
