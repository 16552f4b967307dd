//! The objects the installer creates, built from the sealed plan alone.

use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString,
    api::{
        batch::v1::{Job, JobSpec},
        core::v1::{
            Capabilities, Container, DownwardAPIVolumeFile, DownwardAPIVolumeSource,
            EmptyDirVolumeSource, EnvVar, Namespace, ObjectFieldSelector, PodSecurityContext,
            PodSpec, PodTemplateSpec, ResourceRequirements, SeccompProfile, Secret,
            SecretVolumeSource, SecurityContext, ServiceAccount, Volume, VolumeMount,
        },
        rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject},
    },
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{ObjectMeta, OwnerReference},
    },
};

use crate::api::{GROUP, Plan, VERSION};

use super::{
    Settings,
    names::{self, AttemptNames, CredentialNames},
};

/// The ownership marks every object of an attempt carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marks {
    pub workspace_uid: String,
    pub workspace_key: String,
    pub attempt: i64,
    pub attempt_id: String,
    pub preparation_id: String,
}

impl Marks {
    fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.owner_labels();
        labels.insert(
            names::LABEL_ATTEMPT_ID.into(),
            names::label_value(&self.attempt_id),
        );
        labels.insert(
            names::LABEL_PREPARATION_ID.into(),
            names::label_value(&self.preparation_id),
        );
        labels
    }

    fn owner_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (names::LABEL_MANAGED_BY.into(), names::MANAGED_BY.into()),
            (
                names::LABEL_WORKSPACE_UID.into(),
                self.workspace_uid.clone(),
            ),
        ])
    }

    fn annotations(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (
                names::ANNOTATION_WORKSPACE.into(),
                self.workspace_key.clone(),
            ),
            (names::ANNOTATION_ATTEMPT.into(), self.attempt.to_string()),
        ])
    }

    /// Metadata of an object the Workspace owns (it outlives every attempt).
    fn owner_meta(&self, name: &str, namespace: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: namespace.map(str::to_owned),
            labels: Some(self.owner_labels()),
            annotations: Some(BTreeMap::from([(
                names::ANNOTATION_WORKSPACE.into(),
                self.workspace_key.clone(),
            )])),
            ..Default::default()
        }
    }

    /// Metadata of a hub object the Workspace owns: also an owner reference to it, so the
    /// object is its, and goes with it, by UID.
    fn hub_meta(&self, name: &str, namespace: &str) -> ObjectMeta {
        let workspace = self
            .workspace_key
            .split_once('/')
            .map(|(_, name)| name)
            .unwrap_or_default();
        ObjectMeta {
            owner_references: Some(vec![OwnerReference {
                api_version: format!("{GROUP}/{VERSION}"),
                kind: "Workspace".into(),
                name: workspace.to_owned(),
                uid: self.workspace_uid.clone(),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..self.owner_meta(name, Some(namespace))
        }
    }

    fn meta(&self, name: &str, namespace: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(self.labels()),
            annotations: Some(self.annotations()),
            ..Default::default()
        }
    }
}

/// The release namespace, owned by the Workspace (not by an attempt).
pub fn namespace(plan: &Plan, marks: &Marks) -> Namespace {
    let mut labels = marks.owner_labels();
    labels.insert(
        names::LABEL_PREPARATION_ID.into(),
        names::label_value(&marks.preparation_id),
    );
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
    ServiceAccount {
        metadata: marks.meta(&names.runner, &plan.namespace),
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
    RoleBinding {
        metadata: marks.meta(&names.runner, &plan.namespace),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: names.runner.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: names.runner.clone(),
            namespace: Some(plan.namespace.clone()),
            ..Default::default()
        }]),
    }
}

/// The chart values of the plan, as the `values.yaml` Helm reads (JSON is YAML).
pub fn values_text(plan: &Plan) -> String {
    match &plan.values {
        serde_json::Value::Null => "{}".to_owned(),
        values => values.to_string(),
    }
}

/// Whether the plan's values travel in the Job's Pod template (a downwardAPI volume) rather
/// than in a values Secret: one object fewer to create and delete per attempt.
pub fn values_in_job(plan: &Plan) -> bool {
    values_text(plan).len() <= names::VALUES_ANNOTATION_LIMIT
}

/// The Secret that carries `values.yaml` to the runner when the values are too large for
/// the Job's Pod template.
pub fn values_secret(plan: &Plan, names: &AttemptNames, marks: &Marks) -> Secret {
    Secret {
        metadata: marks.meta(&names.values, &plan.namespace),
        type_: Some("Opaque".into()),
        immutable: Some(true),
        data: Some(BTreeMap::from([(
            names::VALUES_FILE.to_owned(),
            ByteString(values_text(plan).into_bytes()),
        )])),
        ..Default::default()
    }
}

/// The argument vector of the runner: `helm upgrade --install` with the pinned chart,
/// version, release, namespace and values file. Never a shell.
pub fn helm_args(plan: &Plan, settings: &Settings) -> Vec<String> {
    // Helm gives up before the Job's deadline, so it records the failure itself instead
    // of being killed mid-operation.
    let timeout = (settings.job_deadline_seconds - 30).max(30);
    // Every value rides in its own `--flag=value` argument and the release and chart come
    // after `--`, so nothing in a plan can be read as another flag.
    [
        "upgrade",
        "--install",
        &format!("--repo={}", plan.chart.repository),
        &format!("--version={}", plan.version),
        &format!("--namespace={}", plan.namespace),
        &format!(
            "--values={}/{}",
            names::VALUES_MOUNT_PATH,
            names::VALUES_FILE
        ),
        &format!("--wait={}", settings.helm_wait),
        &format!("--timeout={timeout}s"),
        "--history-max=10",
        &format!(
            "--description=attempt {} ({})",
            plan.attempt, plan.attempt_id
        ),
        "--",
        &plan.release,
        &plan.chart.name,
    ]
    .map(String::from)
    .to_vec()
}

/// The attempt's Job: one try, a deadline, the installer's finalizer, the attempt's
/// ServiceAccount, the values mounted read-only (from its own Pod template, or the values
/// Secret when too large), a read-only root file system.
pub fn job(plan: &Plan, names: &AttemptNames, marks: &Marks, settings: &Settings) -> Job {
    let mut meta = marks.meta(&names.job, &plan.namespace);
    meta.finalizers = Some(vec![names::FINALIZER.to_owned()]);
    let scratch = |sub: &str| format!("{}/helm/{sub}", names::SCRATCH_MOUNT_PATH);
    let env = [
        ("HOME", names::SCRATCH_MOUNT_PATH.to_owned()),
        ("HELM_CACHE_HOME", scratch("cache")),
        ("HELM_CONFIG_HOME", scratch("config")),
        ("HELM_DATA_HOME", scratch("data")),
    ]
    .into_iter()
    .map(|(name, value)| EnvVar {
        name: name.into(),
        value: Some(value),
        ..Default::default()
    })
    .collect();
    let container = Container {
        name: "helm".into(),
        // The end of helm's output becomes the termination message when it fails: the
        // installer carries it to the tenant, who cannot see the edge.
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        image: Some(settings.helm_image.clone()),
        command: Some(vec!["helm".into()]),
        args: Some(helm_args(plan, settings)),
        env: Some(env),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "values".into(),
                mount_path: names::VALUES_MOUNT_PATH.into(),
                read_only: Some(true),
                ..Default::default()
            },
            VolumeMount {
                name: "scratch".into(),
                mount_path: names::SCRATCH_MOUNT_PATH.into(),
                ..Default::default()
            },
        ]),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Default::default()
            }),
            ..Default::default()
        }),
        resources: Some(ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".into(), Quantity("100m".into())),
                ("memory".into(), Quantity("128Mi".into())),
            ])),
            limits: Some(BTreeMap::from([(
                "memory".into(),
                Quantity("512Mi".into()),
            )])),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut pod_annotations = marks.annotations();
    let values = if values_in_job(plan) {
        pod_annotations.insert(names::ANNOTATION_VALUES.into(), values_text(plan));
        Volume {
            name: "values".into(),
            downward_api: Some(DownwardAPIVolumeSource {
                default_mode: Some(0o440),
                items: Some(vec![DownwardAPIVolumeFile {
                    path: names::VALUES_FILE.into(),
                    field_ref: Some(ObjectFieldSelector {
                        field_path: format!("metadata.annotations['{}']", names::ANNOTATION_VALUES),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    } else {
        Volume {
            name: "values".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(names.values.clone()),
                default_mode: Some(0o440),
                ..Default::default()
            }),
            ..Default::default()
        }
    };
    let pod_meta = ObjectMeta {
        labels: Some(marks.labels()),
        annotations: Some(pod_annotations),
        ..Default::default()
    };
    Job {
        metadata: meta,
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            completions: Some(1),
            parallelism: Some(1),
            active_deadline_seconds: Some(settings.job_deadline_seconds),
            template: PodTemplateSpec {
                metadata: Some(pod_meta),
                spec: Some(PodSpec {
                    service_account_name: Some(names.runner.clone()),
                    automount_service_account_token: Some(true),
                    restart_policy: Some("Never".into()),
                    enable_service_links: Some(false),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(65532),
                        run_as_group: Some(65532),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".into(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    containers: vec![container],
                    volumes: Some(vec![
                        values,
                        Volume {
                            name: "scratch".into(),
                            empty_dir: Some(EmptyDirVolumeSource::default()),
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The provider's hub ServiceAccount, in the organization's namespace, owned by the
/// Workspace (its UID label and an owner reference): it goes when the Workspace goes.
pub fn hub_service_account(names: &CredentialNames, marks: &Marks) -> ServiceAccount {
    ServiceAccount {
        metadata: marks.hub_meta(&names.service_account, &names.hub_namespace),
        automount_service_account_token: Some(false),
        ..Default::default()
    }
}

/// Binds the provider's hub ServiceAccount to the Role the Recipe names; owned by the
/// Workspace like the ServiceAccount.
pub fn hub_role_binding(names: &CredentialNames, role: &str, marks: &Marks) -> RoleBinding {
    RoleBinding {
        metadata: marks.hub_meta(&names.service_account, &names.hub_namespace),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: role.to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: names.service_account.clone(),
            namespace: Some(names.hub_namespace.clone()),
            ..Default::default()
        }]),
    }
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
