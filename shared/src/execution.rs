//! What a Recipe may grant an attempt's runner on the edge.
//!
//! A runner's Role lives in the release namespace, and a Role rule on `namespaces` there is
//! a right over that namespace object itself: with it, a runner (or a chart running as it)
//! could relabel its namespace to a looser Pod Security Standard and run privileged Pods.
//! Rules that reach RBAC itself (`roles`, `rolebindings`, `escalate`, `bind`,
//! `impersonate`), tokens of other accounts, or everything (`*`) open the same door. The
//! same list is held in three places, each on its own: the Recipe CRD's schema (CEL), the
//! webhook when it seals a plan ([`forbidden`]), and the edge's confinement policy for the
//! Roles the hub's identity creates.

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// A namespaced RBAC rule granted to an attempt's runner in the release namespace. No rule
/// may reach the namespace itself, RBAC, other accounts' tokens or everything (`*`): see
/// `providers_shared::execution`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new(CEL_RULE).message(
    "a runner may not be granted namespaces, roles, rolebindings, clusterroles, clusterrolebindings, serviceaccounts/token or \"*\", nor the verbs escalate, bind, impersonate or \"*\": with them it could loosen its namespace's Pod Security Standard or widen its own rights"
))]
pub struct ExecutionRule {
    /// API groups, as in an RBAC PolicyRule ("" is the core group).
    #[schemars(length(max = 8), inner(length(max = 253)))]
    pub api_groups: Vec<String>,
    /// Resources, as in an RBAC PolicyRule.
    #[schemars(length(max = 16), inner(length(max = 96)))]
    pub resources: Vec<String>,
    /// Verbs, as in an RBAC PolicyRule.
    #[schemars(length(max = 8), inner(length(max = 32)))]
    pub verbs: Vec<String>,
}

/// Resources no runner is granted.
pub const FORBIDDEN_RESOURCES: &[&str] = &[
    "*",
    "namespaces",
    "roles",
    "rolebindings",
    "clusterroles",
    "clusterrolebindings",
    "serviceaccounts/token",
];

/// Verbs no runner is granted.
pub const FORBIDDEN_VERBS: &[&str] = &["*", "escalate", "bind", "impersonate"];

/// Why a rule may not be granted to a runner, or `None` when it may.
pub fn forbidden(rule: &ExecutionRule) -> Option<String> {
    if rule.api_groups.iter().any(|g| g == "*") {
        return Some("it names every API group (\"*\")".to_owned());
    }
    if let Some(resource) = rule.resources.iter().find(|r| {
        FORBIDDEN_RESOURCES.contains(&r.as_str())
            || r.starts_with("namespaces/")
            // RBAC reads `*/status` as that subresource of every resource (namespaces
            // included) and `x/*` as every subresource of x: no wildcard anywhere.
            || r.contains('*')
    }) {
        return Some(format!(
            "it grants {}, which would let the runner change its own namespace or RBAC",
            crate::text::quoted(resource)
        ));
    }
    if let Some(verb) = rule
        .verbs
        .iter()
        .find(|v| FORBIDDEN_VERBS.contains(&v.as_str()))
    {
        return Some(format!(
            "it grants the verb {}, which would let the runner widen its own rights",
            crate::text::quoted(verb)
        ));
    }
    None
}

/// The CEL rule of the Recipe CRD's `execution` items: the same list as [`forbidden`].
pub const CEL_RULE: &str = "!self.apiGroups.exists(g, g == '*') \
    && !self.resources.exists(r, r in ['*', 'namespaces', 'roles', 'rolebindings', 'clusterroles', 'clusterrolebindings', 'serviceaccounts/token'] || r.startsWith('namespaces/') || r.contains('*')) \
    && !self.verbs.exists(v, v in ['*', 'escalate', 'bind', 'impersonate'])";

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> ExecutionRule {
        let owned = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        ExecutionRule {
            api_groups: owned(groups),
            resources: owned(resources),
            verbs: owned(verbs),
        }
    }

    #[test]
    fn what_a_chart_needs_is_granted() {
        assert_eq!(
            forbidden(&rule(
                &[""],
                &["configmaps", "services"],
                &["get", "create"]
            )),
            None
        );
        assert_eq!(
            forbidden(&rule(&["apps"], &["deployments"], &["get", "watch"])),
            None
        );
        assert_eq!(
            forbidden(&rule(&["apps"], &["deployments/scale"], &["patch"])),
            None
        );
    }

    #[rstest]
    #[case(rule(&[""], &["namespaces"], &["patch"]), "namespaces")]
    #[case(rule(&[""], &["namespaces/status"], &["update"]), "namespaces/status")]
    #[case(rule(&["rbac.authorization.k8s.io"], &["rolebindings"], &["create"]), "rolebindings")]
    #[case(rule(&[""], &["serviceaccounts/token"], &["create"]), "serviceaccounts/token")]
    #[case(rule(&["*"], &["pods"], &["get"]), "every API group")]
    #[case(rule(&[""], &["*"], &["get"]), "\"*\"")]
    #[case(rule(&["apps"], &["deployments/*"], &["get"]), "deployments/*")]
    #[case(rule(&[""], &["*/status"], &["patch"]), "*/status")]
    #[case(rule(&[""], &["*/token"], &["create"]), "*/token")]
    #[case(rule(&["rbac.authorization.k8s.io"], &["roles"], &["escalate"]), "roles")]
    #[case(rule(&[""], &["pods"], &["impersonate"]), "impersonate")]
    #[case(rule(&[""], &["pods"], &["*"]), "verb \"*\"")]
    fn its_own_namespace_rbac_and_wildcards_are_not(
        #[case] rule: ExecutionRule,
        #[case] says: &str,
    ) {
        let why = forbidden(&rule).expect("forbidden");
        assert!(why.contains(says), "{why}");
    }
}
