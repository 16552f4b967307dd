//! The API double's objects and what the API server does when they are written: UIDs,
//! resourceVersions and generations assigned, guards (preconditions, `test` operations,
//! resourceVersions) enforced, finalizers holding a deletion, and the `status`
//! subresource writing only the status.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::{answer::Answer, request::Key};

/// The objects of one double, by where they live.
#[derive(Default)]
pub struct Store {
    objects: BTreeMap<Key, Value>,
    /// The last resourceVersion given out (one counter for every kind, as etcd's).
    version: u64,
    /// The last UID given out.
    uids: u64,
    /// What the UIDs this double gives start with (`hub`, `edge`), so a test tells them
    /// apart.
    prefix: String,
}

impl Store {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
            ..Self::default()
        }
    }

    pub fn get(&self, key: &Key) -> Option<&Value> {
        self.objects.get(key)
    }

    /// The objects under `collection` (every namespace when its namespace is empty).
    pub fn under(&self, collection: &Key) -> impl Iterator<Item = (&Key, &Value)> {
        self.objects.iter().filter(move |(key, _)| {
            key.api == collection.api
                && key.plural == collection.plural
                && (collection.namespace.is_empty() || key.namespace == collection.namespace)
        })
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// Puts `object` at `key` as it is, with the UID, resourceVersion and creation time of
    /// a stored object when it has none: how a test sets the scene.
    pub fn put(&mut self, key: Key, mut object: Value) -> Value {
        let uid = self.next_uid();
        let version = self.next_version();
        let meta = metadata_of(&mut object);
        meta.entry("uid").or_insert(json!(uid));
        meta.insert("resourceVersion".into(), json!(version));
        meta.entry("creationTimestamp")
            .or_insert(json!(Timestamp::now().to_string()));
        meta.entry("generation").or_insert(json!(1));
        self.objects.insert(key, object.clone());
        object
    }

    /// Changes the stored object at `key` with `change`, as another client would.
    pub fn edit(&mut self, key: &Key, change: impl FnOnce(&mut Value)) -> Option<Value> {
        let version = self.next_version();
        let object = self.objects.get_mut(key)?;
        change(object);
        metadata_of(object).insert("resourceVersion".into(), json!(version));
        Some(object.clone())
    }

    /// POST: `body` created in `collection`.
    pub fn create(&mut self, collection: &Key, mut body: Value) -> Answer {
        let meta = metadata_of(&mut body);
        let name = match (meta.get("name"), meta.get("generateName")) {
            (Some(Value::String(name)), _) => name.clone(),
            (_, Some(Value::String(prefix))) => format!("{prefix}{}", self.uids + 1),
            _ => return Answer::status(422, "Invalid", "name or generateName is required"),
        };
        let key = Key {
            name,
            ..collection.clone()
        };
        if self.objects.contains_key(&key) {
            return Answer::status(
                409,
                "AlreadyExists",
                &format!("{} \"{}\" already exists", key.plural, key.name),
            );
        }
        let meta = metadata_of(&mut body);
        meta.insert("name".into(), json!(key.name));
        if !key.namespace.is_empty() {
            meta.insert("namespace".into(), json!(key.namespace));
        }
        meta.remove("uid");
        meta.remove("resourceVersion");
        meta.remove("creationTimestamp");
        // A status is written through its subresource, never by a create.
        if let Some(object) = body.as_object_mut() {
            object.remove("status");
            if key.plural == "namespaces" && key.api == "v1" {
                object.insert("status".into(), json!({"phase": "Active"}));
            }
        }
        Answer::created(self.put(key, body))
    }

    /// PUT: the object replaced by `body`, unless `body` names another resourceVersion.
    pub fn replace(&mut self, key: &Key, subresource: Option<&str>, body: Value) -> Answer {
        let Some(old) = self.objects.get(key).cloned() else {
            return Answer::not_found(key);
        };
        if let Some(Value::String(asked)) = body.pointer("/metadata/resourceVersion")
            && Some(asked.as_str())
                != old
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
        {
            return Answer::conflict(
                key,
                "the object has been modified; please apply your changes to the latest version and try again",
            );
        }
        self.write(key, &old, body, subresource)
    }

    /// PATCH with the `content_type`'s meaning: a JSON patch (its `test` operations
    /// guard it), a merge or strategic merge patch (taken as a merge), or a server-side
    /// apply (taken as a merge of the body into the object, which it creates when absent).
    pub fn patch(
        &mut self,
        key: &Key,
        subresource: Option<&str>,
        content_type: &str,
        body: Value,
    ) -> Answer {
        let apply = content_type.starts_with("application/apply-patch");
        let old = match self.objects.get(key) {
            Some(old) => old.clone(),
            None if apply => {
                let collection = Key {
                    name: String::new(),
                    ..key.clone()
                };
                let mut body = body;
                metadata_of(&mut body).insert("name".into(), json!(key.name));
                return self.create(&collection, body);
            }
            None => return Answer::not_found(key),
        };
        let mut patched = old.clone();
        if content_type.starts_with("application/json-patch+json") {
            let operations: json_patch::Patch = match serde_json::from_value(body) {
                Ok(operations) => operations,
                Err(error) => return Answer::status(400, "BadRequest", &error.to_string()),
            };
            if json_patch::patch(&mut patched, &operations).is_err() {
                // What the API server answers when a `test` operation (or a path) fails:
                // a message that names nothing.
                return Answer::status(
                    422,
                    "Invalid",
                    "the server rejected our request due to an error in our request",
                );
            }
            if let Some(renamed) = patched.pointer("/metadata/name").and_then(Value::as_str)
                && renamed != key.name
            {
                return Answer::status(
                    400,
                    "BadRequest",
                    &format!(
                        "the name of the object ({renamed}) does not match the name on the URL ({})",
                        key.name
                    ),
                );
            }
        } else {
            json_patch::merge(&mut patched, &body);
        }
        if patched.pointer("/metadata/resourceVersion") != old.pointer("/metadata/resourceVersion")
        {
            return Answer::conflict(
                key,
                "the object has been modified; please apply your changes to the latest version and try again",
            );
        }
        self.write(key, &old, patched, subresource)
    }

    /// DELETE: refused when a precondition does not hold; held by finalizers (the
    /// deletion time set) until they are removed; else the object is gone.
    pub fn delete(&mut self, key: &Key, options: &Value) -> Answer {
        let Some(old) = self.objects.get(key).cloned() else {
            return Answer::not_found(key);
        };
        for field in ["uid", "resourceVersion"] {
            if let Some(Value::String(asked)) = options.pointer(&format!("/preconditions/{field}"))
                && Some(asked.as_str())
                    != old
                        .pointer(&format!("/metadata/{field}"))
                        .and_then(Value::as_str)
            {
                return Answer::conflict(
                    key,
                    &format!("Precondition failed: {field} in precondition: {asked}"),
                );
            }
        }
        if has_finalizers(&old) {
            let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
            let version = self.next_version();
            let mut held = old;
            let meta = metadata_of(&mut held);
            if !deleting {
                meta.insert(
                    "deletionTimestamp".into(),
                    json!(Timestamp::now().to_string()),
                );
                let generation = meta.get("generation").and_then(Value::as_i64).unwrap_or(1);
                meta.insert("generation".into(), json!(generation + 1));
            }
            meta.insert("resourceVersion".into(), json!(version));
            self.objects.insert(key.clone(), held.clone());
            return Answer::ok(held);
        }
        self.objects.remove(key);
        Answer::ok(old)
    }

    /// Stores `new` over `old`: what cannot change is kept, a write of the main resource
    /// keeps the status and one of the `status` subresource changes only it; an object
    /// being deleted whose last finalizer went is removed.
    fn write(
        &mut self,
        key: &Key,
        old: &Value,
        mut new: Value,
        subresource: Option<&str>,
    ) -> Answer {
        if subresource == Some("status") {
            let status = new.get("status").cloned();
            new = old.clone();
            if let Some(object) = new.as_object_mut() {
                match status {
                    Some(status) => object.insert("status".into(), status),
                    None => object.remove("status"),
                };
            }
        } else if let Some(object) = new.as_object_mut() {
            match old.get("status") {
                Some(status) => object.insert("status".into(), status.clone()),
                None => object.remove("status"),
            };
        }
        for kept in [
            "uid",
            "creationTimestamp",
            "name",
            "namespace",
            "deletionTimestamp",
        ] {
            let meta = metadata_of(&mut new);
            match old.pointer(&format!("/metadata/{kept}")) {
                Some(value) => meta.insert(kept.into(), value.clone()),
                None => meta.remove(kept),
            };
        }
        let spec_changed = without_meta_and_status(&new) != without_meta_and_status(old);
        let version = self.next_version();
        let meta = metadata_of(&mut new);
        meta.insert("resourceVersion".into(), json!(version));
        if spec_changed {
            let generation = meta.get("generation").and_then(Value::as_i64).unwrap_or(1);
            meta.insert("generation".into(), json!(generation + 1));
        }
        if new.pointer("/metadata/deletionTimestamp").is_some() && !has_finalizers(&new) {
            self.objects.remove(key);
            return Answer::ok(new);
        }
        self.objects.insert(key.clone(), new.clone());
        Answer::ok(new)
    }

    fn next_version(&mut self) -> String {
        self.version += 1;
        self.version.to_string()
    }

    fn next_uid(&mut self) -> String {
        self.uids += 1;
        format!("{}-uid-{}", self.prefix, self.uids)
    }
}

/// The object's `metadata`, made an object when it is not one.
fn metadata_of(object: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !object.is_object() {
        *object = json!({});
    }
    let meta = &mut object["metadata"];
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut()
        .expect("metadata was made an object just above")
}

fn has_finalizers(object: &Value) -> bool {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

fn without_meta_and_status(object: &Value) -> Value {
    let mut rest = object.clone();
    if let Some(fields) = rest.as_object_mut() {
        fields.remove("metadata");
        fields.remove("status");
    }
    rest
}

/// Whether `labels` (an object's `metadata.labels`) are selected by `selector`:
/// `k=v`, `k==v`, `k!=v`, `k` and `!k`, comma-separated.
pub fn selected(labels: Option<&Value>, selector: &str) -> bool {
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    selector
        .split(',')
        .map(str::trim)
        .filter(|term| !term.is_empty())
        .all(|term| {
            if let Some((key, value)) = term.split_once("!=") {
                label(key.trim()) != Some(value.trim())
            } else if let Some((key, value)) =
                term.split_once("==").or_else(|| term.split_once('='))
            {
                label(key.trim()) == Some(value.trim())
            } else if let Some(key) = term.strip_prefix('!') {
                label(key.trim()).is_none()
            } else {
                label(term).is_some()
            }
        })
}
