//! Reading a review's body: at most [`super::review::BODY_LIMIT`] bytes, and nothing past it.
//!
//! A body over the limit is not read to its end. When its start names the review's UID, as
//! every AdmissionReview the API server sends does (`{"kind":…,"apiVersion":…,"request":
//! {"uid":…`), the over-size is answered with an AdmissionReview that denies it: the API
//! server shows that message to its caller. A plain HTTP 413, the only other answer, reaches
//! the caller as a 500 that "did not return more information". The API server's JSON
//! escapes `&`, `<`, `>` and bytes that are not UTF-8 in six bytes each, so an object within
//! its own 3 MiB request limit can make a review several times larger.

use axum::body::{Body, Bytes};
use futures::StreamExt;
use http::{HeaderMap, header::CONTENT_LENGTH};

use super::review::{ReviewError, uid_is_well_formed};

/// How much of the start of an oversized body is kept to look for the UID in.
const PREFIX: usize = 4096;

/// A body as far as it was read.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadBody {
    Whole(Bytes),
    /// Over the limit: the UID its start names, when it names one.
    TooLarge {
        uid: Option<String>,
    },
}

/// Reads `body` up to `limit` bytes; past `limit` (or a Content-Length over it), reading
/// stops once the start of the body names a UID, or at [`PREFIX`] bytes.
pub async fn read(headers: &HeaderMap, body: Body, limit: usize) -> Result<ReadBody, ReviewError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let announced_too_large = declared.is_some_and(|length| length > limit as u64);
    let mut read = Vec::with_capacity(match declared {
        Some(length) if !announced_too_large => usize::try_from(length).unwrap_or(0),
        _ => 0,
    });
    let mut chunks = body.into_data_stream();
    let mut over = announced_too_large;
    while let Some(chunk) = chunks.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            // Only the start of an oversized body is wanted, and it is in.
            Err(_) if over => break,
            Err(e) => {
                return Err(ReviewError::Unreadable(providers_shared::text::shown_with(
                    &e.to_string(),
                    256,
                )));
            }
        };
        over = over || read.len() + chunk.len() > limit;
        if !over {
            read.extend_from_slice(&chunk);
            continue;
        }
        let room = PREFIX.saturating_sub(read.len());
        read.extend_from_slice(&chunk[..chunk.len().min(room)]);
        // Answered as soon as the UID is in: a sender that stalls after it holds nothing.
        if read.len() >= PREFIX || uid_at_start(&read).is_some() {
            break;
        }
    }
    if over {
        return Ok(too_large(&read));
    }
    Ok(ReadBody::Whole(Bytes::from(read)))
}

fn too_large(start: &[u8]) -> ReadBody {
    ReadBody::TooLarge {
        uid: uid_at_start(&start[..start.len().min(PREFIX)]).map(str::to_owned),
    }
}

/// The UID an AdmissionReview's first bytes name: the first `"uid":"…"` after
/// `"request":`, when it is made like a UUID. Only ever used to deny, so a body that names
/// some other UID there gets a denial the API server does not match to its review.
pub fn uid_at_start(start: &[u8]) -> Option<&str> {
    let request = find(start, b"\"request\":")?;
    let after_request = &start[request..];
    let key = find(after_request, b"\"uid\":")?;
    let value = after_request[key + b"\"uid\":".len()..].trim_ascii_start();
    let value = value.strip_prefix(b"\"")?;
    let end = value.iter().position(|&b| b == b'"')?;
    let uid = std::str::from_utf8(&value[..end]).ok()?;
    uid_is_well_formed(uid).then_some(uid)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "705ab4f5-6393-11e8-b7cc-42010a800002";

    fn start_of_review(uid: &str) -> Vec<u8> {
        format!(
            r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"uid":"{uid}","kind":{{"group":"providers.platform.dev"}},"object":{{"spec":{{"values":{{"a":""#
        )
        .into_bytes()
    }

    fn headers(length: Option<usize>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(length) = length {
            headers.insert(CONTENT_LENGTH, length.to_string().parse().unwrap());
        }
        headers
    }

    /// A body of `start` then `pad` bytes of `&`, sent in chunks of `chunk` bytes.
    fn body(start: &[u8], pad: usize, chunk: usize) -> (Body, usize) {
        let mut whole = start.to_vec();
        whole.resize(start.len() + pad, b'&');
        let length = whole.len();
        let chunks: Vec<Result<Bytes, std::io::Error>> = whole
            .chunks(chunk)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        (Body::from_stream(futures::stream::iter(chunks)), length)
    }

    #[tokio::test]
    async fn a_body_within_the_limit_is_read_whole() {
        let (body, length) = body(&start_of_review(UID), 1_000, 100);
        let read = read(&headers(Some(length)), body, 10_000).await.unwrap();
        assert!(matches!(read, ReadBody::Whole(bytes) if bytes.len() == length));
    }

    #[tokio::test]
    async fn an_oversized_body_names_its_uid_whether_its_length_is_announced_or_not() {
        for announced in [true, false] {
            for chunk in [1, 100, 64 * 1024] {
                let (body, length) = body(&start_of_review(UID), 100_000, chunk);
                let read = read(&headers(announced.then_some(length)), body, 10_000)
                    .await
                    .unwrap();
                assert_eq!(
                    read,
                    ReadBody::TooLarge {
                        uid: Some(UID.to_owned())
                    },
                    "announced {announced}, chunks of {chunk}"
                );
            }
        }
    }

    #[tokio::test]
    async fn an_oversized_body_that_stalls_after_its_uid_is_answered() {
        let first = Bytes::from(start_of_review(UID));
        let chunks = futures::stream::iter([Ok::<_, std::io::Error>(first)])
            .chain(futures::stream::pending());
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            read(&headers(Some(1 << 30)), Body::from_stream(chunks), 10_000),
        )
        .await
        .expect("answered without the rest of the body");
        assert_eq!(
            read,
            Ok(ReadBody::TooLarge {
                uid: Some(UID.to_owned())
            })
        );
    }

    #[tokio::test]
    async fn a_length_announced_over_the_limit_is_not_read_past_the_start() {
        // The stream would fail if read past its first chunk.
        let first = Bytes::from(start_of_review(UID));
        let chunks = futures::stream::iter([Ok(first)]).chain(futures::stream::iter([Err(
            std::io::Error::other("read too far"),
        )]));
        let body = Body::from_stream(chunks);
        let read = read(&headers(Some(1 << 30)), body, 10_000).await;
        assert_eq!(
            read,
            Ok(ReadBody::TooLarge {
                uid: Some(UID.to_owned())
            })
        );
    }

    #[test]
    fn only_a_uid_made_like_a_uuid_is_taken_from_the_start() {
        assert_eq!(uid_at_start(&start_of_review(UID)), Some(UID));
        assert_eq!(uid_at_start(&start_of_review("a\\nb")), None);
        assert_eq!(uid_at_start(&start_of_review("")), None);
        assert_eq!(uid_at_start(b"{\"uid\":\"abc\"}"), None, "outside request");
        assert_eq!(uid_at_start(b"{\"request\":{\"uid\":\"abc"), None, "cut");
        assert_eq!(
            uid_at_start(b"{\"request\": {\"uid\": \"abc-1\"}}"),
            Some("abc-1")
        );
    }
}
