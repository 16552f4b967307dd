//! The plugin's writes: server-side apply of a Workspace's intent, with field manager
//! `kubectl-provider`.
//!
//! Server-side apply removes a field its manager stopped sending. So every write sends the
//! whole intent the plugin stands for (recipe, edge, version, values, retry), read from
//! the live object where a command does not change it; `retry` must never vanish, or the
//! counter would go down and the API server would refuse the write.
//!
//! The plugin never sends `spec.plan`: the webhook seals it, and restores it when an
//! apply omits it.
//!
//! Force (taking fields over from another manager, such as a GitOps tool):
//! - `install` never forces: a conflict means someone else declares this Workspace
//!   differently, and the user should learn who instead of silently winning.
//! - `set` forces only with `--force-conflicts`, as `kubectl apply --server-side` does.
//! - `retry`, `repair` and `rollback` force: it changes only `spec.retry`, to one more than the value it read, under
//!   a resourceVersion precondition (so two concurrent retries cannot both count), and a
//!   retry is an explicit request that another manager's old claim on the counter should
//!   not block.

use kube::api::{Patch, PatchParams};
use providers_shared::{
    api::{GROUP, VERSION, WorkspaceSpec},
    installer::names::ANNOTATION_ROLLBACK_TO,
};
use serde_json::{Map, Value, json};

/// The field manager of every write the plugin makes.
pub const FIELD_MANAGER: &str = "kubectl-provider";

/// The intent fields of a Workspace the plugin writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Intent {
    pub recipe: String,
    pub edge: String,
    pub version: Option<String>,
    pub values: Map<String, Value>,
    pub retry: Option<i64>,
    /// Sent with a raised retry: the attempt whose kept plan the webhook seals again.
    pub rollback_to: Option<i64>,
}

impl Intent {
    /// The intent a live Workspace holds.
    pub fn from_spec(spec: &WorkspaceSpec) -> Self {
        Self {
            recipe: spec.recipe.clone(),
            edge: spec.edge.clone(),
            version: spec.version.clone(),
            values: match &spec.values {
                Some(Value::Object(map)) => map.clone(),
                _ => Map::new(),
            },
            retry: spec.retry,
            rollback_to: None,
        }
    }
}

/// The apply configuration for a Workspace. With `resource_version`, the API server
/// refuses the write if the object changed since it was read.
pub fn apply_body(
    namespace: &str,
    name: &str,
    intent: &Intent,
    resource_version: Option<&str>,
) -> Value {
    let mut metadata = json!({ "name": name, "namespace": namespace });
    if let Some(rv) = resource_version {
        metadata["resourceVersion"] = json!(rv);
    }
    if let Some(attempt) = intent.rollback_to {
        metadata["annotations"] = json!({ ANNOTATION_ROLLBACK_TO: attempt.to_string() });
    }
    let mut spec = json!({ "recipe": intent.recipe, "edge": intent.edge });
    if let Some(version) = &intent.version {
        spec["version"] = json!(version);
    }
    if !intent.values.is_empty() {
        spec["values"] = Value::Object(intent.values.clone());
    }
    if let Some(retry) = intent.retry {
        spec["retry"] = json!(retry);
    }
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": "Workspace",
        "metadata": metadata,
        "spec": spec,
    })
}

/// The patch parameters of an apply.
pub fn params(force: bool, dry_run: bool) -> PatchParams {
    let mut params = PatchParams::apply(FIELD_MANAGER);
    params.force = force;
    params.dry_run = dry_run;
    params
}

/// The patch of an apply body.
pub fn patch(body: &Value) -> Patch<&Value> {
    Patch::Apply(body)
}

/// What an apply did, in kubectl's words.
pub fn verb(existed: bool, changed: bool) -> &'static str {
    match (existed, changed) {
        (false, _) => "created",
        (true, true) => "configured",
        (true, false) => "unchanged",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent() -> Intent {
        Intent {
            recipe: "podinfo".into(),
            edge: "edge-1".into(),
            version: None,
            values: Map::new(),
            retry: None,
            rollback_to: None,
        }
    }

    #[test]
    fn an_install_sends_only_what_was_asked() {
        assert_eq!(
            apply_body("org-a", "demo", &intent(), None),
            json!({
                "apiVersion": "providers.platform.dev/v1alpha1",
                "kind": "Workspace",
                "metadata": { "name": "demo", "namespace": "org-a" },
                "spec": { "recipe": "podinfo", "edge": "edge-1" },
            })
        );
    }

    #[test]
    fn the_live_intent_is_kept_whole_and_never_includes_the_plan() {
        let spec: WorkspaceSpec = serde_json::from_value(json!({
            "recipe": "podinfo", "edge": "edge-1", "version": "6.5.0",
            "values": { "a": 1 }, "retry": 2,
            "plan": crate::testdata::plan_json(3),
        }))
        .unwrap();
        let mut intent = Intent::from_spec(&spec);
        intent.retry = intent.retry.map(|r| r + 1);
        let body = apply_body("org-a", "demo", &intent, Some("42"));
        assert_eq!(
            body["spec"],
            json!({ "recipe": "podinfo", "edge": "edge-1", "version": "6.5.0", "values": { "a": 1 }, "retry": 3 })
        );
        assert_eq!(body["metadata"]["resourceVersion"], "42");
    }

    #[test]
    fn applies_use_the_plugin_s_field_manager() {
        let patch_params = params(false, true);
        assert_eq!(
            patch_params.field_manager.as_deref(),
            Some("kubectl-provider")
        );
        assert!(!patch_params.force);
        assert!(patch_params.dry_run);
    }

    #[test]
    fn verbs_read_like_kubectl_apply() {
        assert_eq!(verb(false, true), "created");
        assert_eq!(verb(true, true), "configured");
        assert_eq!(verb(true, false), "unchanged");
    }
}
