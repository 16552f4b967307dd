//! Decoding the metadata an edge sends, one object at a time, keeping only what the
//! installer reads of it.
//!
//! Anyone who may write an object in a release namespace decides what its metadata holds,
//! so two rules hold for every list page and watch event of [`super::metadata_watch`]:
//!
//! - **One object never makes a list or a watch unreadable.** serde_json refuses JSON
//!   nested deeper than 128 levels, and the API server stores `managedFields` of any depth
//!   (a ConfigMap whose `fieldsV1` is nested 200 levels deep is accepted). A page is first
//!   split into its items without decoding them (serde_json skips a raw value without a
//!   depth limit or recursion), and each item is decoded alone. An object whose managed
//!   fields cannot be decoded is kept with one stand-in entry by [`UNREADABLE_MANAGER`]: its
//!   release then shows it as changed by that manager (drift), rather than the change
//!   being hidden or the namespace's other objects going unwatched.
//! - **Only the annotations a decision reads are kept**, decoded item by item, so a list
//!   holds the trimmed objects and at most one page of text: another writer's annotations
//!   (`kubectl apply` keeps a whole object, a Secret's data included, in one) are dropped
//!   as each object is read.

use std::{borrow::Cow, collections::BTreeMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ManagedFieldsEntry, ObjectMeta};
use kube::{
    Resource,
    api::PartialObjectMetaExt,
    core::{PartialObjectMeta, WatchEvent},
};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The manager named for an object whose managed fields the installer cannot decode.
pub(super) const UNREADABLE_MANAGER: &str = "(managed fields the installer cannot read)";
/// The annotations a decision reads: the installer's own, and Helm's release ownership.
const READ_ANNOTATIONS: [&str; 2] = ["providers.platform.dev/", "meta.helm.sh/"];
/// The longest annotation value kept; the installer's and Helm's are short.
const MAX_ANNOTATION_BYTES: usize = 1024;
/// The longest `fieldsV1` of one managed-fields entry that is decoded. A trace keeps at
/// most 8 field paths per write; a ConfigMap of 5,000 keys owns about 100 KB of them.
const MAX_FIELDS_V1_BYTES: usize = 256 * 1024;

/// One page of a list: its items, decoded and trimmed, those that could not be decoded
/// at all counted, and the list's metadata (continue token and version).
pub(super) struct Page<K> {
    pub(super) items: Vec<PartialObjectMeta<K>>,
    pub(super) unreadable: usize,
    pub(super) metadata: ListMeta,
}

#[derive(Deserialize)]
struct RawPage<'a> {
    #[serde(default)]
    metadata: ListMeta,
    /// `null` in an empty list.
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

/// Decodes a list page (`PartialObjectMetadataList`). Fails only when the page itself is
/// not a list.
pub(super) fn page<K>(text: &str) -> Result<Page<K>, serde_json::Error>
where
    K: Resource,
{
    let raw: RawPage = serde_json::from_str(text)?;
    let raw_items = raw.items.unwrap_or_default();
    let mut items = Vec::with_capacity(raw_items.len());
    let mut unreadable = 0;
    for item in raw_items {
        match decode_object::<K>(item.get()) {
            Some(object) => items.push(object),
            None => unreadable += 1,
        }
    }
    Ok(Page {
        items,
        unreadable,
        metadata: raw.metadata,
    })
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type")]
    type_: String,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// What one watch line holds: an event, or why it cannot be read.
pub(super) enum Line<K> {
    Event(Box<WatchEvent<PartialObjectMeta<K>>>),
    /// Not an event at all: a broken server or proxy.
    Malformed(serde_json::Error),
    /// An event whose object could not be decoded, even without its managed fields.
    UnreadableObject,
}

/// Decodes one line of a watch.
pub(super) fn event<K>(line: &[u8]) -> Line<K>
where
    K: Resource,
{
    let raw: RawEvent = match serde_json::from_slice(line) {
        Ok(raw) => raw,
        Err(error) => return Line::Malformed(error),
    };
    let object = || decode_object::<K>(raw.object.get());
    let event = match raw.type_.as_str() {
        "ADDED" => object().map(WatchEvent::Added),
        "MODIFIED" => object().map(WatchEvent::Modified),
        "DELETED" => object().map(WatchEvent::Deleted),
        // Bookmarks and errors are the API server's own, small and flat.
        _ => match serde_json::from_slice::<WatchEvent<PartialObjectMeta<K>>>(line) {
            Ok(event) => Some(event),
            Err(error) => return Line::Malformed(error),
        },
    };
    match event {
        Some(event) => Line::Event(Box::new(event)),
        None => Line::UnreadableObject,
    }
}

/// Decodes one object's metadata and trims it; with a stand-in for managed fields that
/// cannot be decoded; `None` when not even that can be.
///
/// The metadata is split into raw fields first, borrowed from `raw`: annotations that are
/// not kept are never copied (a `kubectl apply` of a 250 KB Secret brings a 250 KB one),
/// so a list of thousands of such objects does not leave the allocator holding a heap of
/// freed copies between the small objects the cache keeps.
pub(super) fn decode_object<K>(raw: &str) -> Option<PartialObjectMeta<K>>
where
    K: Resource,
{
    let RawObject { metadata } = serde_json::from_str(raw).ok()?;
    let mut metadata = metadata.unwrap_or_default();
    let annotations = match metadata.remove("annotations") {
        Some(raw) => read_annotations(raw)?,
        None => None,
    };
    let managed_fields = metadata.remove("managedFields");
    let rest = serde_json::to_string(&metadata).ok()?;
    let mut meta: ObjectMeta = serde_json::from_str(&rest).ok()?;
    meta.annotations = annotations;
    meta.managed_fields = managed_fields.and_then(|raw| {
        read_managed_fields(raw).unwrap_or_else(|| {
            Some(vec![ManagedFieldsEntry {
                manager: Some(UNREADABLE_MANAGER.to_owned()),
                operation: Some("Update".to_owned()),
                ..ManagedFieldsEntry::default()
            }])
        })
    });
    Some(meta.into_response_partial::<K>())
}

/// The managed fields, each entry decoded alone; an entry's `fieldsV1` longer than
/// [`MAX_FIELDS_V1_BYTES`] is left out (the write is still there, by its manager and time,
/// without the fields it owns), so a writer cannot make every event of its object cost a
/// decode of a megabyte of field names. `None` when an entry cannot be decoded.
fn read_managed_fields(raw: &RawValue) -> Option<Option<Vec<ManagedFieldsEntry>>> {
    let entries: Option<Vec<BTreeMap<Cow<'_, str>, &RawValue>>> =
        serde_json::from_str(raw.get()).ok()?;
    let Some(entries) = entries else {
        return Some(None);
    };
    let mut decoded = Vec::with_capacity(entries.len());
    for mut entry in entries {
        if entry
            .get("fieldsV1")
            .is_some_and(|fields| fields.get().len() > MAX_FIELDS_V1_BYTES)
        {
            entry.remove("fieldsV1");
        }
        let text = serde_json::to_string(&entry).ok()?;
        decoded.push(serde_json::from_str::<ManagedFieldsEntry>(&text).ok()?);
    }
    Some(Some(decoded))
}

#[derive(Deserialize)]
struct RawObject<'a> {
    #[serde(borrow, default)]
    metadata: Option<BTreeMap<Cow<'a, str>, &'a RawValue>>,
}

/// The annotations a decision reads, decoded from the raw map; `None` inside for none.
fn read_annotations(raw: &RawValue) -> Option<Option<BTreeMap<String, String>>> {
    let all: Option<BTreeMap<Cow<'_, str>, &RawValue>> = serde_json::from_str(raw.get()).ok()?;
    let mut kept = BTreeMap::new();
    for (key, value) in all.unwrap_or_default() {
        let read = READ_ANNOTATIONS
            .iter()
            .any(|prefix| key.starts_with(prefix));
        // The raw text is the value quoted, escapes included: never shorter than the value.
        if read && value.get().len() <= MAX_ANNOTATION_BYTES + 2 {
            let value: String = serde_json::from_str(value.get()).ok()?;
            if value.len() <= MAX_ANNOTATION_BYTES {
                kept.insert(key.into_owned(), value);
            }
        }
    }
    Some((!kept.is_empty()).then_some(kept))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    /// `fieldsV1` nested `depth` levels deep.
    fn deep_fields(depth: usize) -> String {
        let mut fields = String::from("{}");
        for level in 0..depth {
            fields = format!("{{\"f:x{level}\":{fields}}}");
        }
        fields
    }

    fn item(name: &str, fields: &str) -> String {
        format!(
            r#"{{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{{"name":"{name}","namespace":"n","resourceVersion":"5","annotations":{{"kubectl.kubernetes.io/last-applied-configuration":"{{\"data\":{{\"password\":\"hunter2\"}}}}","meta.helm.sh/release-name":"hello","providers.platform.dev/drift":"ignore"}},"managedFields":[{{"manager":"kubectl-edit","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{fields}}}]}}}}"#
        )
    }

    #[test]
    fn a_deep_object_is_kept_with_a_stand_in_manager_and_its_neighbours_are_read() {
        let page_text = format!(
            r#"{{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{{"resourceVersion":"9","continue":"next"}},"items":[{},{},{}]}}"#,
            item("a", r#"{"f:data":{"f:greeting":{}}}"#),
            item("deep", &deep_fields(2_000)),
            item("c", "{}"),
        );
        // The whole page does not decode at once...
        assert!(
            serde_json::from_str::<kube::api::ObjectList<PartialObjectMeta<ConfigMap>>>(&page_text)
                .is_err()
        );
        // ...item by item, every object is there.
        let page = page::<ConfigMap>(&page_text).expect("a list page");
        assert_eq!(page.unreadable, 0);
        assert_eq!(page.metadata.continue_.as_deref(), Some("next"));
        let names: Vec<_> = page
            .items
            .iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(names, ["a", "deep", "c"]);
        let managers = |i: usize| -> Vec<String> {
            page.items[i]
                .metadata
                .managed_fields
                .iter()
                .flatten()
                .filter_map(|m| m.manager.clone())
                .collect()
        };
        assert_eq!(managers(0), ["kubectl-edit"]);
        assert_eq!(managers(1), [UNREADABLE_MANAGER]);
        assert_eq!(
            page.items[1].metadata.resource_version.as_deref(),
            Some("5")
        );
    }

    #[test]
    fn a_huge_fields_entry_keeps_its_write_without_its_fields() {
        let keys: Vec<String> = (0..30_000).map(|i| format!("\"f:k{i}\":{{}}")).collect();
        let huge = format!("{{\"f:data\":{{{}}}}}", keys.join(","));
        assert!(huge.len() > MAX_FIELDS_V1_BYTES);
        let decoded = decode_object::<ConfigMap>(&item("a", &huge)).expect("decoded");
        let entries = decoded.metadata.managed_fields.expect("managed fields");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].manager.as_deref(), Some("kubectl-edit"));
        assert_eq!(entries[0].operation.as_deref(), Some("Update"));
        assert!(entries[0].fields_v1.is_none());
        // A small one keeps its fields.
        let small = decode_object::<ConfigMap>(&item("b", r#"{"f:data":{"f:greeting":{}}}"#))
            .expect("decoded");
        assert!(
            small.metadata.managed_fields.expect("managed fields")[0]
                .fields_v1
                .is_some()
        );
    }

    #[test]
    fn an_empty_list_has_null_items() {
        let text = r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"items":null}"#;
        let page = page::<ConfigMap>(text).expect("a list page");
        assert!(page.items.is_empty());
        assert_eq!(page.metadata.resource_version.as_deref(), Some("9"));
    }

    #[test]
    fn only_the_annotations_a_decision_reads_are_kept() {
        let decoded = decode_object::<ConfigMap>(&item("a", "{}")).expect("decoded");
        let keys: Vec<_> = decoded
            .metadata
            .annotations
            .unwrap_or_default()
            .into_keys()
            .collect();
        assert_eq!(
            keys,
            ["meta.helm.sh/release-name", "providers.platform.dev/drift"]
        );
        let long = item("b", "{}").replace("\"ignore\"", &format!("\"{}\"", "x".repeat(2_000)));
        let decoded = decode_object::<ConfigMap>(&long).expect("decoded");
        assert!(
            !decoded
                .metadata
                .annotations
                .unwrap_or_default()
                .contains_key("providers.platform.dev/drift")
        );
    }

    #[test]
    fn a_deep_event_is_read_and_a_broken_line_is_malformed() {
        let line = format!(
            r#"{{"type":"MODIFIED","object":{}}}"#,
            item("deep", &deep_fields(500))
        );
        let Line::Event(modified) = event::<ConfigMap>(line.as_bytes()) else {
            panic!("an event");
        };
        let WatchEvent::Modified(object) = *modified else {
            panic!("a modified event");
        };
        assert_eq!(
            object.metadata.managed_fields.unwrap_or_default()[0]
                .manager
                .as_deref(),
            Some(UNREADABLE_MANAGER)
        );
        assert!(matches!(
            event::<ConfigMap>(b"{not json"),
            Line::Malformed(_)
        ));
        // An object that is not an object's metadata at all.
        assert!(matches!(
            event::<ConfigMap>(br#"{"type":"ADDED","object":{"metadata":[1]}}"#),
            Line::UnreadableObject
        ));
        let gone = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}"#;
        assert!(matches!(
            event::<ConfigMap>(gone),
            Line::Event(error) if matches!(&*error, WatchEvent::Error(status) if status.code == 410)
        ));
    }
}
