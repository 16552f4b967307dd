//! Secrets, compared by the edge's API server: the tests of a dry-run JSON patch, what its
//! refusal says, and the search for the tests that fail. The data never comes to the hub.

use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Map, Value};

use crate::installer::release_objects::{MAX_FIELDS, ObjectTrace};

/// The most `test` operations one Secret's check sends (the API server takes 10,000).
pub const MAX_SECRET_TESTS: usize = 512;
/// The name a Secret's check renames it to, so that the API server refuses the patch:
/// with a `/` it is no object's name.
pub const SENTINEL_NAME: &str = "providers.platform.dev/content-check";

/// Whether the edits a metadata watch traced of an object (`trace`: every write by a
/// manager other than helm) leave the field at `path` to helm alone: none of them names
/// it, a field above it or one below it, and none names more than it could keep.
pub fn helm_alone_by_trace(trace: Option<&ObjectTrace>, path: &str) -> bool {
    let Some(trace) = trace else {
        return false;
    };
    let related = |edited: &str| {
        let (short, long) = match edited.len() <= path.len() {
            true => (edited, path),
            false => (path, edited),
        };
        long.strip_prefix(short)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
    };
    trace
        .edits
        .iter()
        .all(|edit| !edit.more_fields && !edit.fields.iter().any(|f| related(f)))
}

/// One `test` operation of a Secret's content check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretTest {
    /// The JSON pointer tested (`/data/password`).
    pub pointer: String,
    /// The field as a person reads it (`data.password`).
    pub field: String,
    pub value: Value,
}

/// The tests of a Secret's check: the chart's `type`, labels and annotations, and each key
/// of `data` and `stringData` as the API server stores it (`data`, canonical base64).
pub fn secret_tests(expected: &Value) -> Result<Vec<SecretTest>, String> {
    let mut tests = Vec::new();
    let mut push = |pointer: String, field: String, value: Value| {
        tests.push(SecretTest {
            pointer,
            field,
            value,
        })
    };
    if let Some(kind) = expected.get("type").filter(|t| t.is_string()) {
        push("/type".into(), "type".into(), kind.clone());
    }
    for part in ["labels", "annotations"] {
        for (key, value) in entries(expected.get("metadata").and_then(|m| m.get(part))) {
            push(
                format!("/metadata/{part}/{}", escape(key)),
                format!("metadata.{part}.{key}"),
                value.clone(),
            );
        }
    }
    let mut data: std::collections::BTreeMap<&str, String> = Default::default();
    for (key, value) in entries(expected.get("data")) {
        let Some(encoded) = value.as_str() else {
            continue;
        };
        let bytes = STANDARD
            .decode(encoded.trim())
            .map_err(|e| format!("data.{key} is not base64: {e}"))?;
        data.insert(key, STANDARD.encode(bytes));
    }
    for (key, value) in entries(expected.get("stringData")) {
        if let Some(text) = value.as_str() {
            data.insert(key, STANDARD.encode(text));
        }
    }
    for (key, encoded) in data {
        push(
            format!("/data/{}", escape(key)),
            format!("data.{key}"),
            Value::String(encoded),
        );
    }
    if tests.len() > MAX_SECRET_TESTS {
        return Err(format!(
            "it sets {} keys, labels and annotations, above the {MAX_SECRET_TESTS} a content check tests",
            tests.len()
        ));
    }
    Ok(tests)
}

/// The JSON patch that asks whether `tests` all hold: the tests, then a rename. The API
/// server applies a JSON patch before anything else: a failed test refuses it at once
/// (422, a message that names nothing), and a patch whose tests all held is refused next
/// for the name it changes (400), before any admission or storage, so the answer never
/// holds the Secret. The name is not one any object may have, so the refusal is certain.
pub fn secret_patch(tests: &[&SecretTest]) -> Value {
    let mut operations: Vec<Value> = tests
        .iter()
        .map(|t| serde_json::json!({"op": "test", "path": t.pointer, "value": t.value}))
        .collect();
    operations.push(
        serde_json::json!({"op": "replace", "path": "/metadata/name", "value": SENTINEL_NAME}),
    );
    Value::Array(operations)
}

/// What the API server's refusal of a [`secret_patch`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestAnswer {
    /// Refused for the rename: every test held.
    Held,
    /// Refused while the patch applied: a test failed.
    Failed,
    /// Any other answer: nothing can be said.
    Unknown,
}

/// Reads the API server's refusal (`code`, `reason`, `message`) of a [`secret_patch`].
pub fn test_answer(code: u16, reason: &str, message: &str) -> TestAnswer {
    match (code, reason) {
        (400, "BadRequest") if message.contains(SENTINEL_NAME) => TestAnswer::Held,
        (422, "Invalid") => TestAnswer::Failed,
        _ => TestAnswer::Unknown,
    }
}

/// Which of a Secret's tests fail, when all one can ask is whether a group of them all
/// holds: the whole group first, then halves of each group that fails, down to single
/// tests. One question when nothing differs; about twice the logarithm of the number of
/// tests per test that fails. It stops once [`MAX_FIELDS`] are found.
#[derive(Clone, Debug)]
pub struct FailedTestSearch {
    /// Groups still to ask about, the next last.
    pending: Vec<std::ops::Range<usize>>,
    found: Vec<usize>,
}

impl FailedTestSearch {
    pub fn new(tests: usize) -> Self {
        Self {
            pending: (tests > 0).then_some(0..tests).into_iter().collect(),
            found: Vec::new(),
        }
    }

    /// The tests to ask about next, or `None` when the search is over.
    pub fn next_group(&self) -> Option<std::ops::Range<usize>> {
        if self.found.len() >= MAX_FIELDS {
            return None;
        }
        self.pending.last().cloned()
    }

    /// Takes the answer for the group [`Self::next_group`] named.
    pub fn answer(&mut self, held: bool) {
        let Some(group) = self.pending.pop() else {
            return;
        };
        if held || group.is_empty() {
            return;
        }
        if group.len() == 1 {
            self.found.push(group.start);
            return;
        }
        let middle = group.start + group.len() / 2;
        self.pending.push(middle..group.end);
        self.pending.push(group.start..middle);
    }

    /// The tests found failing, in order.
    pub fn failed(&self) -> &[usize] {
        &self.found
    }
}

fn entries(value: Option<&Value>) -> impl Iterator<Item = (&String, &Value)> {
    value
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(Map::iter)
}

/// A key as one step of a JSON pointer (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
