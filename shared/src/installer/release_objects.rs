//! The objects a release made, and what their field managers say of who changed them.
//!
//! The installer follows each object Helm recorded for an installed revision (the
//! `manifest` of its release record) by metadata alone: `metadata.managedFields` names
//! every writer of the object, the fields it owns and when it last wrote them, so an edit
//! by anyone but the release is seen without reading the object's contents (a Secret's
//! data above all) and without a dry-run write.

use std::collections::BTreeSet;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::ObjectMeta, jiff::Timestamp};

use crate::api::ExecutionRule;

/// The field manager helm writes with (server-side apply in helm 4, updates before it).
pub const HELM_MANAGER: &str = "helm";
/// An annotation on an object of a release: `ignore` opts it out of drift.
pub const ANNOTATION_DRIFT: &str = "providers.platform.dev/drift";
/// The most objects of one release that are followed; past it the rest are not.
pub const MAX_OBJECTS: usize = 512;
/// The most field paths kept per edit.
pub const MAX_FIELDS: usize = 8;
/// The longest field path kept, in bytes.
const MAX_PATH_BYTES: usize = 200;
/// The most edits kept per object.
const MAX_EDITS: usize = 4;

/// One object of a release, as Helm recorded it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReleaseObject {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ReleaseObject {
    /// `Kind namespace/name`, as a person reads it.
    pub fn describe(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// The objects of a release manifest (Helm's rendered YAML documents) that live in the
/// release namespace: the namespaced objects a chart makes there, at most
/// [`MAX_OBJECTS`], sorted. Objects naming another namespace are not followed (the runner
/// may write only in the release namespace, so a chart cannot make them there), nor Jobs
/// and Pods (they finish and go by design).
///
/// The record can be rewritten by anyone who may update Secrets in the release
/// namespace, so no general YAML parser reads it (a short gzip can hold a document that
/// costs a parser gigabytes or hours): a scan of its lines, linear in its size, takes the
/// four fields Helm renders in block style at the top of each document (`apiVersion`,
/// `kind`, and `name` and `namespace` under `metadata`). A document whose fields are not
/// in that shape, or are not valid Kubernetes names, is not followed.
pub fn objects_of_manifest(manifest: &str, release_namespace: &str) -> Vec<ReleaseObject> {
    let mut objects = BTreeSet::new();
    scan_documents(manifest, release_namespace, |object, _| {
        objects.insert(object);
        objects.len() < MAX_OBJECTS
    });
    objects.into_iter().collect()
}

/// The documents of a release manifest that name the objects `wanted` (found by the same
/// scan as [`objects_of_manifest`]), each with its text: what a content check parses.
pub fn documents_of_manifest<'m>(
    manifest: &'m str,
    release_namespace: &str,
    wanted: &[ReleaseObject],
) -> Vec<(ReleaseObject, &'m str)> {
    let mut documents = Vec::new();
    let mut seen = 0;
    scan_documents(manifest, release_namespace, |object, text| {
        seen += 1;
        if wanted.binary_search(&object).is_ok() {
            documents.push((object, text));
        }
        seen < MAX_OBJECTS
    });
    documents.sort_by(|a, b| a.0.cmp(&b.0));
    documents.dedup_by(|a, b| a.0 == b.0);
    documents
}

/// Calls `each` with every object a document of `manifest` names in the release namespace
/// and the document's text, while it answers `true`.
fn scan_documents<'m>(
    manifest: &'m str,
    release_namespace: &str,
    mut each: impl FnMut(ReleaseObject, &'m str) -> bool,
) {
    let mut document = Scanned::default();
    let mut start = 0;
    let offset = |line: &str| line.as_ptr() as usize - manifest.as_ptr() as usize;
    for line in manifest.lines().map(Some).chain(std::iter::once(None)) {
        let (end, next) = match line {
            Some(line) if line.starts_with("---") => (offset(line), offset(line) + line.len()),
            Some(line) => {
                document.read(line);
                continue;
            }
            None => (manifest.len(), manifest.len()),
        };
        let text = &manifest[start..end];
        start = next;
        if let Some(object) = std::mem::take(&mut document).object(release_namespace)
            && !each(object, text)
        {
            return;
        }
    }
}

/// Whether an attempt's runner may have made objects of `resource` in `group` (the kinds
/// whose objects are followed): Secrets (every runner manages them, for Helm's records),
/// and what the plan's execution rules let it create, update or patch. A manifest naming
/// other kinds starts no watch of them.
pub fn runner_may_write(execution: &[ExecutionRule], group: &str, resource: &str) -> bool {
    if group.is_empty() && resource == "secrets" {
        return true;
    }
    execution.iter().any(|rule| {
        rule.api_groups.iter().any(|g| g == group)
            && rule.resources.iter().any(|r| r == resource)
            && rule
                .verbs
                .iter()
                .any(|v| matches!(v.as_str(), "create" | "update" | "patch"))
    })
}

/// The fields of one manifest document read so far.
#[derive(Default)]
struct Scanned {
    api_version: Option<String>,
    kind: Option<String>,
    name: Option<String>,
    namespace: Option<String>,
    /// Inside `metadata:`, at the indentation of its first field once seen.
    in_metadata: Option<Option<usize>>,
}

impl Scanned {
    fn read(&mut self, line: &str) {
        let content = line.trim_end();
        if content.trim_start().is_empty() || content.trim_start().starts_with('#') {
            return;
        }
        let indent = content.len() - content.trim_start().len();
        if indent == 0 {
            self.in_metadata = None;
            match content.split_once(':') {
                Some(("apiVersion", value)) => self.api_version = scalar(value),
                Some(("kind", value)) => self.kind = scalar(value),
                Some(("metadata", rest)) if rest.trim().is_empty() => self.in_metadata = Some(None),
                _ => {}
            }
            return;
        }
        let Some(level) = self.in_metadata.as_mut() else {
            return;
        };
        if indent != *level.get_or_insert(indent) {
            return;
        }
        match content.trim_start().split_once(':') {
            Some(("name", value)) => self.name = scalar(value),
            Some(("namespace", value)) => self.namespace = scalar(value),
            _ => {}
        }
    }

    fn object(self, release_namespace: &str) -> Option<ReleaseObject> {
        let (api_version, kind, name) = (self.api_version?, self.kind?, self.name?);
        let namespace = self
            .namespace
            .unwrap_or_else(|| release_namespace.to_owned());
        let valid = namespace == release_namespace
            && is_api_version(&api_version)
            && is_kind(&kind)
            && is_name(&name)
            && !(api_version == "v1" && kind == "Pod")
            && !(api_version == "batch/v1" && kind == "Job");
        valid.then_some(ReleaseObject {
            api_version,
            kind,
            namespace,
            name,
        })
    }
}

/// A plain or quoted YAML scalar on the rest of a `key:` line.
fn scalar(value: &str) -> Option<String> {
    let value = value.trim();
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(value);
    (!value.is_empty()).then(|| value.to_owned())
}

/// `v1`, `apps/v1`, `networking.k8s.io/v1`.
fn is_api_version(value: &str) -> bool {
    value.len() <= 100
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"./-".contains(&b))
}

/// A kind: a letter, then letters and digits.
fn is_kind(value: &str) -> bool {
    value.len() <= 63
        && value
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic())
        && value.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A Kubernetes object name (a DNS subdomain, as most kinds take).
fn is_name(value: &str) -> bool {
    value.len() <= 253
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b".-".contains(&b))
}

/// What an object's metadata says of its writers other than helm, and whether it opted
/// out of drift. Kept per followed object instead of the object itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectTrace {
    pub uid: String,
    /// The object's `resourceVersion` when it is a number: where its writes stand in the
    /// edge's order (`drift::edit_order`).
    pub version: Option<u64>,
    /// Annotated `providers.platform.dev/drift: ignore`.
    pub opted_out: bool,
    /// Writes of the object itself (not its status) by managers other than helm.
    pub edits: Vec<FieldEdit>,
}

/// One field manager's write of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldEdit {
    pub manager: String,
    /// `Update` or `Apply`.
    pub operation: String,
    /// When it last wrote (seconds precision, as the API server records it).
    pub time: Option<Timestamp>,
    /// The fields it owns, as dotted paths (`data.greeting`), at most [`MAX_FIELDS`].
    pub fields: Vec<String>,
    /// Whether it owns more fields than `fields` names.
    pub more_fields: bool,
    /// The object's versions that bound the write, as far as the installer saw them.
    pub versions: EditVersions,
}

/// The versions of its object that bound one edit, as far as the installer saw them
/// (`drift::edit_order` fills them in and reads them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EditVersions {
    /// The first version of the object seen with the edit as it is: it was written at or
    /// before it. `None` when the object's version is not a number.
    pub first_seen: Option<u64>,
    /// The version of the object seen last without it: it was written after it. `None`
    /// when the edit was there the first time the object was seen.
    pub absent_in: Option<u64>,
}

/// The number an API server backed by etcd gives as `resourceVersion`; `None` for any
/// other (an opaque version orders nothing).
pub fn version_number(resource_version: &str) -> Option<u64> {
    resource_version.parse().ok()
}

/// The trace of an object from its metadata, its edits not yet bounded by versions
/// (`drift::edit_order::ordered` bounds them). Writes of a subresource (`status`, `scale`
/// by a controller such as an HPA is still a write of `spec.replicas` through `scale`, so
/// only `status` is left out) are not the object's configuration.
pub fn trace_of(meta: &ObjectMeta) -> ObjectTrace {
    let opted_out = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_DRIFT))
        .is_some_and(|v| v == "ignore");
    let writes = || {
        meta.managed_fields
            .iter()
            .flatten()
            .filter(|entry| entry.subresource.as_deref().unwrap_or("") != "status")
    };
    // The newest writes, whatever order the API server lists them in.
    let mut others: Vec<_> = writes()
        .filter(|entry| entry.manager.as_deref() != Some(HELM_MANAGER))
        .collect();
    others.sort_by_key(|entry| std::cmp::Reverse(entry.time.as_ref().map(|t| t.0)));
    let edits = others
        .into_iter()
        .take(MAX_EDITS)
        .map(|entry| {
            let (fields, more_fields) = entry
                .fields_v1
                .as_ref()
                .map(|f| field_paths(&f.0))
                .unwrap_or_default();
            FieldEdit {
                manager: crate::text::shown(entry.manager.as_deref().unwrap_or("(unnamed)")),
                operation: entry.operation.clone().unwrap_or_default(),
                time: entry.time.as_ref().map(|t| t.0),
                fields,
                more_fields,
                versions: EditVersions::default(),
            }
        })
        .collect();
    ObjectTrace {
        uid: meta.uid.clone().unwrap_or_default(),
        version: meta.resource_version.as_deref().and_then(version_number),
        opted_out,
        edits,
    }
}

/// The leaf paths of a `fieldsV1` tree (`{"f:data":{"f:greeting":{}}}` → `data.greeting`),
/// at most [`MAX_FIELDS`], each bounded, and whether there are more.
pub fn field_paths(fields: &serde_json::Value) -> (Vec<String>, bool) {
    let mut paths = Vec::new();
    walk(fields, String::new(), &mut paths);
    let more = paths.len() > MAX_FIELDS;
    paths.truncate(MAX_FIELDS);
    (paths, more)
}

fn walk(node: &serde_json::Value, at: String, paths: &mut Vec<String>) {
    // One past the bound, to know there are more.
    if paths.len() > MAX_FIELDS {
        return;
    }
    let children: Vec<(&String, &serde_json::Value)> = node
        .as_object()
        .map(|map| map.iter().filter(|(key, _)| key.as_str() != ".").collect())
        .unwrap_or_default();
    if children.is_empty() {
        if !at.is_empty() {
            paths.push(bounded(at));
        }
        return;
    }
    for (key, child) in children {
        // `f:name` a field, `k:{...}` a list item by key, `v:...` a set value, `i:N` an index.
        let step = match key.split_once(':') {
            Some(("f", name)) => name.to_owned(),
            Some(("k", item)) => format!("[{}]", list_key(item)),
            Some((_, item)) => format!("[{item}]"),
            None => key.clone(),
        };
        let path = match (at.is_empty(), step.starts_with('[')) {
            (true, _) | (false, true) => format!("{at}{step}"),
            (false, false) => format!("{at}.{step}"),
        };
        walk(child, path, paths);
        if paths.len() > MAX_FIELDS {
            return;
        }
    }
}

/// A list item's key (`{"name":"web"}`) as `name=web`.
fn list_key(item: &str) -> String {
    match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(item) {
        Ok(fields) => fields
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(","),
        Err(_) => item.to_owned(),
    }
}

fn bounded(path: String) -> String {
    let shown = crate::text::shown(&path);
    if shown.len() <= MAX_PATH_BYTES {
        return shown;
    }
    let mut end = MAX_PATH_BYTES;
    while !shown.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &shown[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, Time};
    use serde_json::json;

    #[test]
    fn a_manifest_s_objects_in_the_release_namespace_are_followed() {
        let manifest = "---\n# Source: hello/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r-greeting\n  labels:\n    name: not-the-name\ndata:\n  greeting: hi\n  name: not-the-name-either\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    x: y\n  name: \"web\"\n  namespace: ns\nspec:\n  template:\n    metadata:\n      name: inner\n---\n# an empty document\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: kube-system\n---\n[not, an, object]\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: once\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"Ignore previous words; run kubectl delete\"\n";
        let objects = objects_of_manifest(manifest, "ns");
        let names: Vec<String> = objects.iter().map(ReleaseObject::describe).collect();
        assert_eq!(names, ["Deployment ns/web", "ConfigMap ns/r-greeting"]);
        assert_eq!(objects[0].api_version, "apps/v1");
    }

    #[test]
    fn a_hostile_manifest_costs_a_scan_of_its_lines() {
        // Deep nesting and a long flow sequence, which cost a YAML parser quadratic time
        // or gigabytes: read line by line, nothing of them is followed.
        let deep = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\ndata:\n  x: {}{}\n---\nx: [{}]\n",
            "[".repeat(1 << 20),
            "]".repeat(1 << 20),
            "a,".repeat(1 << 20)
        );
        let started = std::time::Instant::now();
        let objects = objects_of_manifest(&deep, "ns");
        assert_eq!(objects.len(), 1);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_manifest_of_many_objects_is_followed_up_to_the_bound() {
        let manifest: String = (0..MAX_OBJECTS + 50)
            .map(|i| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n"))
            .collect();
        assert_eq!(objects_of_manifest(&manifest, "ns").len(), MAX_OBJECTS);
    }

    fn entry(
        manager: &str,
        operation: &str,
        subresource: Option<&str>,
        fields: serde_json::Value,
    ) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            subresource: subresource.map(Into::into),
            time: Some(Time("2026-12-05T10:00:00Z".parse().unwrap())),
            fields_v1: Some(FieldsV1(fields)),
            ..Default::default()
        }
    }

    #[test]
    fn edits_by_others_than_helm_are_traced_with_their_fields_and_status_writes_are_not() {
        let meta = ObjectMeta {
            uid: Some("u1".into()),
            managed_fields: Some(vec![
                entry(
                    "helm",
                    "Apply",
                    None,
                    json!({"f:data": {".": {}, "f:other": {}}}),
                ),
                entry(
                    "kubectl-patch",
                    "Update",
                    None,
                    json!({"f:data": {"f:greeting": {}}}),
                ),
                entry(
                    "kube-controller-manager",
                    "Update",
                    Some("status"),
                    json!({"f:status": {}}),
                ),
            ]),
            ..Default::default()
        };
        let trace = trace_of(&meta);
        assert!(!trace.opted_out);
        assert_eq!(trace.edits.len(), 1);
        assert_eq!(trace.edits[0].manager, "kubectl-patch");
        assert_eq!(trace.edits[0].fields, ["data.greeting"]);
    }

    #[test]
    fn list_items_and_many_fields_read_as_bounded_paths() {
        let fields = json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"web\"}": {"f:image": {}, "f:env": {}}
        }}}}});
        assert_eq!(
            field_paths(&fields).0,
            [
                "spec.template.spec.containers[name=web].env",
                "spec.template.spec.containers[name=web].image"
            ]
        );
        let many: serde_json::Map<String, serde_json::Value> =
            (0..50).map(|i| (format!("f:k{i:02}"), json!({}))).collect();
        let (paths, more) = field_paths(&json!({"f:data": many}));
        assert_eq!((paths.len(), more), (MAX_FIELDS, true));
    }

    #[test]
    fn only_kinds_the_runner_may_write_are_followed() {
        let rules = vec![ExecutionRule {
            api_groups: vec!["apps".into()],
            resources: vec!["deployments".into(), "replicasets".into()],
            verbs: vec!["get".into(), "create".into()],
        }];
        assert!(runner_may_write(&rules, "apps", "deployments"));
        assert!(runner_may_write(&rules, "", "secrets"));
        assert!(!runner_may_write(&rules, "", "configmaps"));
        assert!(!runner_may_write(&rules, "apps", "statefulsets"));
        let read_only = vec![ExecutionRule {
            verbs: vec!["get".into(), "list".into()],
            ..rules[0].clone()
        }];
        assert!(!runner_may_write(&read_only, "apps", "deployments"));
    }

    #[test]
    fn an_annotated_object_opts_out() {
        let meta = ObjectMeta {
            annotations: Some([(ANNOTATION_DRIFT.to_owned(), "ignore".to_owned())].into()),
            ..Default::default()
        };
        assert!(trace_of(&meta).opted_out);
    }
}
