//! Onboarding an organization: the objects that make a namespace an organization the
//! platform serves. `kubectl provider org add` applies (or prints) them, the test control
//! plane and the demo use them, and GitOps can apply the printed YAML.
//!
//! The installer holds no right in any namespace until an organization is onboarded: its
//! rights there (minting the provider's hub credential) come from the RoleBinding made
//! here, to the `providers-installer-organization` ClusterRole. Removing the organization
//! removes that RoleBinding, and the rights with it.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        core::v1::Namespace,
        rbac::v1::{RoleBinding, RoleRef, Subject},
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};

/// The label that marks a namespace as an organization's. The controller's admission
/// policy lets it mint credentials only in namespaces that carry it.
pub const ORGANIZATION_LABEL: &str = "providers.platform.dev/organization";
/// The ClusterRole tenants get in their organization's namespace.
pub const TENANT_CLUSTER_ROLE: &str = "providers-tenant";
/// The ClusterRole the installer gets in each organization's namespace.
pub const INSTALLER_CLUSTER_ROLE: &str = "providers-installer-organization";
/// The RoleBinding that gives tenants [`TENANT_CLUSTER_ROLE`].
pub const TENANT_BINDING: &str = "providers-tenants";
/// The RoleBinding that gives the installer [`INSTALLER_CLUSTER_ROLE`].
pub const INSTALLER_BINDING: &str = "providers-installer";

/// Who an organization is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Organization {
    /// The namespace, which is the organization.
    pub name: String,
    /// Groups whose members are the organization's tenants.
    pub groups: Vec<String>,
    /// Users who are the organization's tenants.
    pub users: Vec<String>,
    /// The installer's ServiceAccount: its namespace and name.
    pub installer: (String, String),
}

/// The objects of an onboarded organization.
#[derive(Clone, Debug, PartialEq)]
pub struct Onboarding {
    pub namespace: Namespace,
    pub tenants: RoleBinding,
    pub installer: RoleBinding,
}

/// The namespace (labelled as an organization's, and for the restricted Pod Security
/// level: nothing of the platform runs Pods there), the tenants' RoleBinding and the
/// installer's.
pub fn onboarding(organization: &Organization) -> Onboarding {
    let labels = BTreeMap::from([
        (
            "app.kubernetes.io/managed-by".to_owned(),
            "kubectl-provider".to_owned(),
        ),
        (ORGANIZATION_LABEL.to_owned(), "true".to_owned()),
        (
            "pod-security.kubernetes.io/enforce".to_owned(),
            "restricted".to_owned(),
        ),
    ]);
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(organization.name.clone()),
            labels: Some(labels),
            ..Default::default()
        },
        ..Default::default()
    };
    let subjects = organization
        .groups
        .iter()
        .map(|group| ("Group", group))
        .chain(organization.users.iter().map(|user| ("User", user)))
        .map(|(kind, name)| Subject {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: kind.into(),
            name: name.clone(),
            namespace: None,
        })
        .collect();
    let binding = |name: &str, role: &str, subjects: Vec<Subject>| RoleBinding {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(organization.name.clone()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_owned(),
                "kubectl-provider".to_owned(),
            )])),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: role.to_owned(),
        },
        subjects: Some(subjects),
    };
    let (installer_namespace, installer_account) = &organization.installer;
    Onboarding {
        namespace,
        tenants: binding(TENANT_BINDING, TENANT_CLUSTER_ROLE, subjects),
        installer: binding(
            INSTALLER_BINDING,
            INSTALLER_CLUSTER_ROLE,
            vec![Subject {
                api_group: None,
                kind: "ServiceAccount".into(),
                name: installer_account.clone(),
                namespace: Some(installer_namespace.clone()),
            }],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_organization_is_a_labelled_namespace_with_two_bindings() {
        let objects = onboarding(&Organization {
            name: "org-a".into(),
            groups: vec!["org-a-engineers".into()],
            users: vec!["alice".into()],
            installer: ("providers-system".into(), "providers-controller".into()),
        });
        let labels = objects.namespace.metadata.labels.unwrap();
        assert_eq!(labels[ORGANIZATION_LABEL], "true");
        assert_eq!(labels["pod-security.kubernetes.io/enforce"], "restricted");
        let tenants = objects.tenants.subjects.unwrap();
        assert_eq!(
            tenants
                .iter()
                .map(|s| (s.kind.as_str(), s.name.as_str()))
                .collect::<Vec<_>>(),
            [("Group", "org-a-engineers"), ("User", "alice")]
        );
        assert_eq!(objects.tenants.role_ref.name, TENANT_CLUSTER_ROLE);
        assert_eq!(objects.installer.role_ref.name, INSTALLER_CLUSTER_ROLE);
        assert_eq!(
            objects.installer.metadata.namespace.as_deref(),
            Some("org-a")
        );
        let installer = &objects.installer.subjects.unwrap()[0];
        assert_eq!(
            (
                installer.kind.as_str(),
                installer.name.as_str(),
                installer.namespace.as_deref()
            ),
            (
                "ServiceAccount",
                "providers-controller",
                Some("providers-system")
            )
        );
    }
}
