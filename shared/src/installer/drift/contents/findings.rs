//! What a content check found of a release's objects.

use k8s_openapi::jiff::Timestamp;

use crate::installer::release_objects::ReleaseObject;

/// The most differences one object's comparison collects: far above the fields a drift
/// names (`release_objects::MAX_FIELDS`), so that the release's baseline and the Recipe's ignored fields,
/// filtered afterwards, cannot push a difference out of sight.
pub const MAX_COMPARED: usize = 64;

/// What a drifted object found by its contents says in `foundBy`.
pub const FOUND_BY_CONTENTS: &str = "Contents";

/// What a content check found of one object of the release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContentSeen {
    /// Every field the chart sets holds the chart's value.
    Same,
    /// These fields (at most [`MAX_FIELDS`](crate::installer::release_objects::MAX_FIELDS))
    /// hold another value, or none.
    Differs(Vec<Difference>),
    /// The object is not on the edge.
    Missing,
    /// Not compared, and why (its kind is not readable, its document not parsed, ...).
    Unread(String),
}

impl ContentSeen {
    /// Its name, as the metric of checked objects counts it.
    pub fn name(&self) -> &'static str {
        match self {
            ContentSeen::Same => "Same",
            ContentSeen::Differs(_) => "Differs",
            ContentSeen::Missing => "Missing",
            ContentSeen::Unread(_) => "Unread",
        }
    }
}

/// One field the chart sets whose live value is another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// Its path (`spec.template.spec.containers[name=web].image`).
    pub field: String,
    /// SHA-256 of the live value's JSON (of `null` when it has none); none for a
    /// Secret's, which is never read.
    pub live_digest: Option<String>,
    /// Whether the object's managed fields gave the field to `helm` alone when it was
    /// compared: what helm itself stored, when that was right after the attempt.
    pub helm_only: bool,
}

impl Difference {
    /// A difference of `field` of a Secret: compared on the edge, its value unknown here.
    pub fn of_secret(field: String, helm_only: bool) -> Self {
        Self {
            field,
            live_digest: None,
            helm_only,
        }
    }
}

/// The last content check of an installed revision's objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentFindings {
    /// The UID of the revision's record whose manifest was compared.
    pub record_uid: String,
    pub checked_at: Timestamp,
    /// The first check after the attempt, which this process saw end.
    pub after_attempt: bool,
    /// The name of the revision's record, when its manifest is no longer the one the
    /// installer first read: rewritten on the edge since.
    pub rewritten_record: Option<String>,
    pub objects: Vec<(ReleaseObject, ContentSeen)>,
}
