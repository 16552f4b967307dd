//! The content check of an installed release on its edge (ADR 47): each object its
//! manifest sets, compared with what is live, for the fields the chart sets.
//!
//! - Any kind but Secrets: the object is read (a list by its name, which the installer's
//!   list right in the namespace allows) and compared by the core's `differing_fields`.
//! - Secrets: their data never comes to the hub. A dry-run JSON patch of `test`
//!   operations ending in a rename is sent; the edge's API server always refuses it, for
//!   a failed test or, when every test held, for the rename. Groups of tests that fail
//!   are halved until the keys that differ are found.
//!
//! One object's read that the edge refuses is reported for that object; an edge that does
//! not answer stops the check (it is made again on the next pass).

use std::sync::Arc;

use k8s_openapi::{api::core::v1::Secret, jiff::Timestamp};
use kube::{
    Api, Client,
    api::{DynamicObject, ListParams, Patch, PatchParams},
};
use providers_shared::installer::{
    ObjectSeen, ReleaseRevision,
    drift::contents::{
        self, ContentFindings, ContentSeen, Difference, FailedTestSearch, SecretTest, TestAnswer,
    },
    release_objects::{ObjectTrace, ReleaseObject},
};

use crate::{
    edge::helm_release,
    support::error::Error,
    support::stop::{self, Stop},
};
use providers_edge_watch::{EdgeCache, UnfollowedKinds};

/// The objects of the installed revision a content check compares: its manifest's, the
/// kinds of them not followed, and the manifest when the pass read it already.
pub struct ReleaseManifest<'a> {
    pub objects: Arc<Vec<ReleaseObject>>,
    pub unfollowed: &'a UnfollowedKinds,
    pub manifest: Option<Arc<str>>,
}

/// The most dry-run tests one Secret's comparison sends.
const MAX_REQUESTS_PER_SECRET: usize = 24;

/// What a content check reads on one edge.
pub struct ContentReads<'a> {
    pub edge: &'a str,
    pub client: &'a Client,
    pub cache: &'a EdgeCache,
    pub namespace: &'a str,
}

/// Compares the objects of `revision` (`release`: its manifest's, less the kinds not
/// followed) with what is live; `seen` is what the metadata watches show of them
/// (who else wrote a Secret's fields); `after_attempt` says it is the first check after
/// the attempt. A record gone or unreadable compares nothing, and
/// is not read again before the next check is due.
pub async fn check_contents(
    reads: &ContentReads<'_>,
    revision: &ReleaseRevision,
    release: ReleaseManifest<'_>,
    seen: &[(ReleaseObject, ObjectSeen)],
    after_attempt: bool,
) -> Result<ContentFindings, Stop> {
    let ContentReads {
        edge,
        client,
        namespace,
        ..
    } = *reads;
    let ReleaseManifest {
        objects,
        unfollowed,
        manifest,
    } = release;
    let read = match manifest {
        Some(manifest) => helm_release::documents_of(manifest, namespace, objects).await,
        None => helm_release::documents(edge, client, namespace, &revision.secret, objects).await?,
    };
    // A record whose manifest is not the one first read was rewritten on the edge: what
    // it says now is not compared with, and the rewrite is drift.
    let pinned = reads.cache.pinned_manifest(&revision.uid);
    let (documents, rewritten_record) = match read {
        Some(read) if pinned.is_some_and(|p| p != read.manifest_digest) => {
            (Vec::new(), Some(revision.secret.clone()))
        }
        Some(read) => (read.documents, None),
        None => (Vec::new(), None),
    };
    let mut found = Vec::with_capacity(documents.len());
    for (object, expected) in documents {
        let kind = (object.api_version.clone(), object.kind.clone());
        let seen = match expected {
            Err(why) => ContentSeen::Unread(why),
            Ok(_) if unfollowed.contains_key(&kind) => {
                ContentSeen::Unread("its kind is not followed on the edge".to_owned())
            }
            Ok(expected) if contents::opted_out(&expected) => {
                ContentSeen::Unread("its chart opts it out of drift".to_owned())
            }
            Ok(expected) if object.api_version == "v1" && object.kind == "Secret" => {
                let trace =
                    seen.iter()
                        .find(|(o, _)| *o == object)
                        .and_then(|(_, seen)| match seen {
                            ObjectSeen::Present(trace) => Some(trace),
                            _ => None,
                        });
                secret_contents(reads, &object, &expected, trace).await?
            }
            Ok(expected) => object_contents(reads, &object, &kind, &expected).await?,
        };
        found.push((object, seen));
    }
    Ok(ContentFindings {
        record_uid: revision.uid.clone(),
        checked_at: Timestamp::now(),
        after_attempt,
        rewritten_record,
        objects: found,
    })
}

/// An object of any kind but Secret, read and compared with `expected`.
async fn object_contents(
    reads: &ContentReads<'_>,
    object: &ReleaseObject,
    kind: &(String, String),
    expected: &serde_json::Value,
) -> Result<ContentSeen, Stop> {
    let Some(resource) = reads.cache.resource_of(reads.client, kind).await else {
        return Ok(ContentSeen::Unread(
            "the edge serves no namespaced kind of that apiVersion and name".to_owned(),
        ));
    };
    let api: Api<DynamicObject> =
        Api::namespaced_with(reads.client.clone(), reads.namespace, &resource);
    let by_name = ListParams::default().fields(&format!("metadata.name={}", object.name));
    let listed = match api.list(&by_name).await {
        Ok(listed) => listed,
        Err(kube::Error::Api(status)) => {
            return Ok(ContentSeen::Unread(format!(
                "the edge refused to list it: {}",
                status.message
            )));
        }
        Err(other) => return Err(stop::edge_failure(reads.edge, other)),
    };
    let Some(live) = listed.items.into_iter().next() else {
        return Ok(ContentSeen::Missing);
    };
    let live = serde_json::to_value(&live).unwrap_or_default();
    Ok(match contents::differing_fields(expected, &live) {
        (fields, _) if fields.is_empty() => ContentSeen::Same,
        (fields, _) => ContentSeen::Differs(fields),
    })
}

/// A Secret compared with `expected` by the edge's API server: its data is never read.
async fn secret_contents(
    reads: &ContentReads<'_>,
    object: &ReleaseObject,
    expected: &serde_json::Value,
    trace: Option<&ObjectTrace>,
) -> Result<ContentSeen, Stop> {
    let tests = match contents::secret_tests(expected) {
        Ok(tests) => tests,
        Err(why) => return Ok(ContentSeen::Unread(why)),
    };
    let api: Api<Secret> = Api::namespaced(reads.client.clone(), reads.namespace);
    let dry_run = PatchParams {
        dry_run: true,
        ..PatchParams::default()
    };
    let mut search = FailedTestSearch::new(tests.len());
    let mut asked = 0;
    while let Some(group) = search.next_group() {
        // Enough to find a key that differs among thousands; past it, what was found is
        // reported (the Secret differs either way), so no Secret costs more than this.
        if asked == MAX_REQUESTS_PER_SECRET {
            break;
        }
        asked += 1;
        let asked: Vec<&SecretTest> = tests[group].iter().collect();
        let patch: json_patch::Patch = serde_json::from_value(contents::secret_patch(&asked))
            .map_err(|source| {
                Stop::Failed(Error::Serialize {
                    what: "a Secret's content test",
                    source,
                })
            })?;
        let status = match api
            .patch(&object.name, &dry_run, &Patch::Json::<()>(patch))
            .await
        {
            // The rename is always refused: an edge that answers otherwise is not one
            // whose answers can be read (and what it sent is dropped unread).
            Ok(_) => {
                return Ok(ContentSeen::Unread(
                    "the edge's API server accepted a patch it must refuse".to_owned(),
                ));
            }
            Err(kube::Error::Api(status)) => status,
            Err(other) => return Err(stop::edge_failure(reads.edge, other)),
        };
        match (
            status.code,
            contents::test_answer(status.code, &status.reason, &status.message),
        ) {
            (_, TestAnswer::Held) => search.answer(true),
            (_, TestAnswer::Failed) => search.answer(false),
            (404, _) => return Ok(ContentSeen::Missing),
            (403, _) => {
                return Ok(ContentSeen::Unread(
                    "the edge does not let the installer test Secrets here (a dry-run patch: grant `patch` on secrets in the ClusterRole providers-edge-namespace)".to_owned(),
                ));
            }
            _ => {
                return Ok(ContentSeen::Unread(format!(
                    "the edge answered a test with {}: {}",
                    status.code, status.message
                )));
            }
        }
    }
    if asked == MAX_REQUESTS_PER_SECRET && search.failed().is_empty() {
        return Ok(ContentSeen::Differs(vec![Difference::of_secret(
            "data".to_owned(),
            false,
        )]));
    }
    let failed: Vec<Difference> = search
        .failed()
        .iter()
        .map(|&index| {
            let field = tests[index].field.clone();
            let helm_only = contents::helm_alone_by_trace(trace, &field);
            Difference::of_secret(field, helm_only)
        })
        .collect();
    Ok(match failed.is_empty() {
        true => ContentSeen::Same,
        false => ContentSeen::Differs(failed),
    })
}
