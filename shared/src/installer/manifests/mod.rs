//! The objects the installer creates, built from the sealed plan alone.

mod marks;
mod runner_job;
mod values;

use k8s_openapi::{
    api::{
        core::v1::{Namespace, Secret, ServiceAccount},
        rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject},
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};

use crate::api::Plan;

use super::names::{self, AttemptNames, CredentialNames};

pub use marks::Marks;
pub use runner_job::{helm_args, job};
pub use values::{values_in_job, values_secret, values_text};

/// The release namespace, owned by the Workspace (not by an attempt).
pub fn namespace(plan: &Plan, marks: &Marks) -> Namespace {
    let mut labels = marks.preparation_labels();
    labels.insert(
        names::LABEL_POD_SECURITY_ENFORCE.into(),
        names::POD_SECURITY_LEVEL.into(),
    );
    Namespace {
        metadata: ObjectMeta {
            labels: Some(labels),
            ..marks.owner_meta(&plan.namespace, None)
        },
        ..Default::default()
    }
}

/// The runner's ServiceAccount.
pub fn runner_service_account(plan: &Plan, names: &AttemptNames, marks: &Marks) -> ServiceAccount {
    service_account(marks.meta(&names.runner, &plan.namespace))
}

/// A ServiceAccount whose token is not mounted anywhere by default.
fn service_account(metadata: ObjectMeta) -> ServiceAccount {
    ServiceAccount {
        metadata,
        automount_service_account_token: Some(false),
        ..Default::default()
    }
}

/// The runner's rights in the release namespace: Helm's release records (Secrets) and
/// exactly what the Recipe declared.
pub fn runner_role(plan: &Plan, names: &AttemptNames, marks: &Marks) -> Role {
    let mut rules = vec![PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(vec!["secrets".into()]),
        verbs: [
            "get", "list", "watch", "create", "update", "patch", "delete",
        ]
        .map(String::from)
        .to_vec(),
        ..Default::default()
    }];
    rules.extend(plan.execution.iter().map(|rule| PolicyRule {
        api_groups: Some(rule.api_groups.clone()),
        resources: Some(rule.resources.clone()),
        verbs: rule.verbs.clone(),
        ..Default::default()
    }));
    Role {
        metadata: marks.meta(&names.runner, &plan.namespace),
        rules: Some(rules),
    }
}

/// Binds the runner's ServiceAccount to its Role.
pub fn runner_role_binding(plan: &Plan, names: &AttemptNames, marks: &Marks) -> RoleBinding {
    role_binding(
        marks.meta(&names.runner, &plan.namespace),
        &names.runner,
        &names.runner,
        &plan.namespace,
    )
}

/// Binds the ServiceAccount `service_account` in `namespace` to the Role `role`.
fn role_binding(
    metadata: ObjectMeta,
    role: &str,
    service_account: &str,
    namespace: &str,
) -> RoleBinding {
    RoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: role.to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: service_account.to_owned(),
            namespace: Some(namespace.to_owned()),
            ..Default::default()
        }]),
    }
}

/// The provider's hub ServiceAccount, in the organization's namespace, owned by the
/// Workspace (its UID label and an owner reference): it goes when the Workspace goes.
pub fn hub_service_account(names: &CredentialNames, marks: &Marks) -> ServiceAccount {
    service_account(marks.hub_meta(&names.service_account, &names.hub_namespace))
}

/// Binds the provider's hub ServiceAccount to the Role the Recipe names; owned by the
/// Workspace like the ServiceAccount.
pub fn hub_role_binding(names: &CredentialNames, role: &str, marks: &Marks) -> RoleBinding {
    role_binding(
        marks.hub_meta(&names.service_account, &names.hub_namespace),
        role,
        &names.service_account,
        &names.hub_namespace,
    )
}

/// The edge Secret that receives the provider's hub kubeconfig (the shell fills `data`).
/// Owned by the Workspace, not by an attempt: it outlives them all.
pub fn runtime_credential_secret(plan: &Plan, names: &CredentialNames, marks: &Marks) -> Secret {
    Secret {
        metadata: marks.owner_meta(&names.edge_secret, Some(&plan.namespace)),
        type_: Some("Opaque".into()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// Rule `values_reach_helm_unchanged`: the values file reads back as the plan's values,
    /// as JSON and as YAML, whatever characters a tenant's strings and keys hold.
    #[test]
    fn values_with_yaml_line_breaks_and_unprintable_characters_read_back_the_same() {
        let values = json!({
            "greeting": "h\u{e9}\u{2028}\"\\\u{2029}\u{85}",
            "\u{7f}key": "\u{feff}\u{fffe}\u{ffff}\u{9f}\u{80}",
            "plain": "emoji \u{1f600} and <&>",
            "n": [1, -2.5, true, null]
        });
        let text = values_text(&values);
        assert!(
            !text.contains([
                '\u{85}', '\u{2028}', '\u{2029}', '\u{7f}', '\u{feff}', '\u{ffff}'
            ]),
            "{text}"
        );
        assert!(
            text.contains('\u{1f600}') && text.contains('\u{e9}'),
            "printable text stays as it is"
        );
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), values);
        assert_eq!(serde_norway::from_str::<Value>(&text).unwrap(), values);
    }

    #[test]
    fn plain_values_are_the_json_text() {
        assert_eq!(
            values_text(&json!({"a": "b", "c": [1, 2]})),
            r#"{"a":"b","c":[1,2]}"#
        );
    }
}
