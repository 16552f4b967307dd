//! The events of an open metadata watch: its response body read frame by frame into kube
//! `watcher`'s events, keeping a partial line only while one is arriving (an idle watch
//! holds no buffer, ADR 39), and the state a watch is in between its steps
//! (`metadata_watch`).

use std::{
    pin::Pin,
    time::{Duration, Instant},
};

use hyper::body::Body as _;
use kube::{
    Resource,
    client::Body,
    core::{PartialObjectMeta, Status, WatchEvent},
    runtime::watcher::{Error, Event},
};
use serde::de::DeserializeOwned;

use super::metadata_decode::{self, Line};

/// The longest watch event accepted. The API server stores objects of up to about 1.5 MB,
/// and its JSON escapes some characters sixfold (`<` as `\u003c`), so a legitimate event
/// stays under 10 MB; a line longer than this is a broken server, and the watch lists
/// again instead of growing. (At 4 MiB, a Secret with a long owner name could be written
/// past the cap by anyone in the namespace, and every write of it forced a relist.)
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// A watch that ends sooner than this is treated as failed, so the backoff paces the next
/// one: a server (or a proxy) that answers every watch and closes it at once would
/// otherwise keep the installer asking again in a loop.
const SHORTEST_WATCH: Duration = Duration::from_secs(1);

/// Where a metadata watch stands between its steps.
pub(super) enum WatchState {
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

/// What a metadata watch gives: kube `watcher`'s events and errors.
pub(super) type Item<K> = Result<Event<PartialObjectMeta<K>>, Error>;

/// A watch from `version`, open on `body` if any, answered now.
pub(super) fn watching(version: String, body: Option<Body>) -> WatchState {
    WatchState::Watching {
        version,
        body,
        opened: Instant::now(),
        line: Vec::new(),
    }
}

/// An error response's body, at most a page of it.
pub(super) async fn read_to_end(mut body: Body) -> Vec<u8> {
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
pub(super) async fn read_events<K>(
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
