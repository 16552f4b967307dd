//! What a Recipe's platform says is not drift of its releases on an edge.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the installer does not count as drift of this Recipe's releases. Sealed into each
/// plan with the rest of the Recipe: a change applies from the next attempt.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftPolicy {
    /// Field managers whose writes of the release's objects are expected: a controller
    /// that manages part of what the chart made, such as `kube-controller-manager` (an
    /// HPA's replicas) or `cert-manager-cainjector` (an injected `caBundle`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(min = 1, max = 128)))]
    pub ignore_managers: Vec<String>,
    /// Fields of the release's objects that anyone may write, per kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub ignore_fields: Vec<IgnoredFields>,
    /// Who repairs drift: `Manual` (the default: a person runs `kubectl provider repair`)
    /// or `Automatic` (the installer asks for the repair itself, and the webhook seals it
    /// after asking RBAC again as the plan's owner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<Repair>,
    /// After an automatic repair, drift found again within this many seconds of its end
    /// stops automatic repair (Stalled, `RepairLoop`) until a person repairs: two writers
    /// taking turns are never repaired in a loop. Default 600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 60, max = 86400))]
    pub repair_quiet_period_seconds: Option<i64>,
}

/// Who repairs drift of a Recipe's releases.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Repair {
    /// A person repairs (`kubectl provider repair`): drift is reported only.
    #[default]
    Manual,
    /// The installer asks for a repair of the installed plan as soon as it finds drift.
    Automatic,
}

/// The quiet period after an automatic repair when none is given.
pub const DEFAULT_REPAIR_QUIET_PERIOD_SECONDS: i64 = 600;

/// Fields of one kind's objects whose writes are not drift.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IgnoredFields {
    /// The kind, as in the chart's objects (`Deployment`).
    #[schemars(length(min = 1, max = 63))]
    pub kind: String,
    /// Field paths as the drift names them (`spec.replicas`,
    /// `spec.template.spec.containers[name=web].image`); a path covers the fields under it.
    #[schemars(length(min = 1, max = 16), inner(length(min = 1, max = 256)))]
    pub paths: Vec<String>,
}

impl DriftPolicy {
    /// Whether the installer repairs drift itself.
    pub fn repairs_automatically(&self) -> bool {
        self.repair == Some(Repair::Automatic)
    }

    /// How long after an automatic repair new drift stops automatic repair, in seconds.
    pub fn repair_quiet_period(&self) -> i64 {
        self.repair_quiet_period_seconds
            .unwrap_or(DEFAULT_REPAIR_QUIET_PERIOD_SECONDS)
            .clamp(60, 86_400)
    }

    /// Whether `manager`'s writes are expected.
    pub fn ignores_manager(&self, manager: &str) -> bool {
        self.ignore_managers.iter().any(|m| m == manager)
    }

    /// Whether anyone may write `path` of a `kind` object.
    pub fn ignores_field(&self, kind: &str, path: &str) -> bool {
        self.ignore_fields
            .iter()
            .filter(|rule| rule.kind == kind)
            .flat_map(|rule| &rule.paths)
            .any(|ignored| covers(ignored, path))
    }
}

/// Whether `ignored` is `path` or a field above it.
fn covers(ignored: &str, path: &str) -> bool {
    path.strip_prefix(ignored)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_covers_itself_and_the_fields_under_it_only() {
        let policy = DriftPolicy {
            ignore_fields: vec![IgnoredFields {
                kind: "Deployment".into(),
                paths: vec!["spec.replicas".into(), "spec.template.metadata".into()],
            }],
            ..Default::default()
        };
        assert!(policy.ignores_field("Deployment", "spec.replicas"));
        assert!(policy.ignores_field("Deployment", "spec.template.metadata.annotations.x"));
        assert!(!policy.ignores_field("Deployment", "spec.replicasets"));
        assert!(!policy.ignores_field("StatefulSet", "spec.replicas"));
        assert!(!policy.ignores_field("Deployment", "spec"));
    }
}
