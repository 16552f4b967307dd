//! The runner's Job: `helm upgrade --install` of the sealed plan, and nothing else.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        batch::v1::{Job, JobSpec},
        core::v1::{
            Capabilities, Container, DownwardAPIVolumeFile, DownwardAPIVolumeSource,
            EmptyDirVolumeSource, EnvVar, ObjectFieldSelector, PodSecurityContext, PodSpec,
            PodTemplateSpec, ResourceRequirements, SeccompProfile, SecretVolumeSource,
            SecurityContext, Volume, VolumeMount,
        },
    },
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};

use crate::{
    api::Plan,
    installer::{
        Settings,
        names::{self, AttemptNames},
    },
};

use super::{marks::Marks, values::values_text};

/// The argument vector of the runner: `helm upgrade --install` with the pinned chart,
/// version, release, namespace and values file. Never a shell.
pub fn helm_args(plan: &Plan, settings: &Settings) -> Vec<String> {
    // Helm gives up before the Job's deadline, so it records the failure itself instead
    // of being killed mid-operation.
    let timeout = (settings.job_deadline_seconds - 30).max(30);
    // Every value rides in its own `--flag=value` argument and the release and chart come
    // after `--`, so nothing in a plan can be read as another flag.
    let mut args = [
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
    .to_vec();
    if matches!(
        plan.cause,
        Some(crate::api::Cause::Repair | crate::api::Cause::AutomaticRepair)
    ) {
        // A repair puts the sealed plan back: fields someone took over by hand (drift) are
        // taken back instead of failing it. Other attempts leave another manager's fields
        // (an HPA's replicas) to it and fail on a conflict, which helm names.
        let release = args.len() - 3;
        args.insert(release, "--force-conflicts".to_owned());
    }
    args
}

/// The attempt's Job: one try, a deadline, the installer's finalizer, the attempt's
/// ServiceAccount, the values mounted read-only (from its own Pod template, or the values
/// Secret when too large), a read-only root file system.
pub fn job(
    plan: &Plan,
    values: &serde_json::Value,
    names: &AttemptNames,
    marks: &Marks,
    settings: &Settings,
) -> Job {
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
    let text = values_text(values);
    let values = if text.len() <= names::VALUES_ANNOTATION_LIMIT {
        pod_annotations.insert(names::ANNOTATION_VALUES.into(), text);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Cause;

    #[test]
    fn only_a_repair_takes_fields_back_from_other_managers() {
        let mut plan = crate::testing::plan();
        let settings = Settings::default();
        plan.cause = Some(Cause::Upgrade);
        assert!(!helm_args(&plan, &settings).contains(&"--force-conflicts".to_owned()));
        plan.cause = Some(Cause::Repair);
        let args = helm_args(&plan, &settings);
        let forced = args.iter().position(|a| a == "--force-conflicts").unwrap();
        let separator = args.iter().position(|a| a == "--").unwrap();
        assert!(forced < separator, "a flag, before `--`: {args:?}");
        assert_eq!(
            args[separator + 1..],
            [plan.release.clone(), plan.chart.name.clone()]
        );
    }
}
