//! Names, labels and annotations of everything the installer creates.
//!
//! Every name is derived from the sealed plan, so a restarted installer finds what it made
//! instead of making a second one.

use sha2::{Digest, Sha256};

/// The finalizer on Workspaces (held until PrepareDelete is done) and on attempt Jobs
/// (held until the Job's result is recorded in the Workspace's status).
pub const FINALIZER: &str = "providers.platform.dev/installer";

/// `app.kubernetes.io/managed-by` on every object the installer creates.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// The value of [`LABEL_MANAGED_BY`].
pub const MANAGED_BY: &str = "providers-installer";
/// The UID of the Workspace an object belongs to: the ownership every guard checks.
pub const LABEL_WORKSPACE_UID: &str = "providers.platform.dev/workspace-uid";
/// The attempt an object belongs to.
pub const LABEL_ATTEMPT_ID: &str = "providers.platform.dev/attempt-id";
/// The preparation that created an object.
pub const LABEL_PREPARATION_ID: &str = "providers.platform.dev/preparation-id";
/// Set on a release namespace by PrepareDelete: a later Workspace of the same organization
/// and name may adopt it.
pub const LABEL_RELEASED: &str = "providers.platform.dev/released";
/// The Pod Security Standard a release namespace enforces: the edge's confinement policy
/// admits no namespace from the installer without it, so neither the runner nor a chart
/// runs a privileged Pod or reaches the node.
pub const LABEL_POD_SECURITY_ENFORCE: &str = "pod-security.kubernetes.io/enforce";
/// The level of [`LABEL_POD_SECURITY_ENFORCE`].
pub const POD_SECURITY_LEVEL: &str = "baseline";
/// `<organization>/<workspace name>` of the Workspace an object belongs to.
pub const ANNOTATION_WORKSPACE: &str = "providers.platform.dev/workspace";
/// Set on a Workspace by the platform (only callers allowed the `abandon` verb on
/// workspaces may): its deletion goes on without cleaning up on the edge, which is gone
/// for good. The value says why; it is repeated in the Event that records it.
pub const ANNOTATION_ABANDON: &str = "providers.platform.dev/abandon";
/// Set on a Workspace together with a raised spec.retry: the attempt whose kept plan the
/// webhook seals again (a rollback). The webhook consumes it: it is never stored.
pub const ANNOTATION_ROLLBACK_TO: &str = "providers.platform.dev/rollback-to";
/// Set on a Workspace by the installer together with a raised spec.retry, under a drift
/// policy of `repair: Automatic`: the installed attempt it asks the webhook to repair, for
/// the plan's owner. Only the installer's identity may (the `autorepair` verb on
/// workspaces); the webhook consumes it: it is never stored.
pub const ANNOTATION_AUTOMATIC_REPAIR: &str = "providers.platform.dev/automatic-repair";
/// On a runner Job's Pod template: the plan's chart values, projected into the runner as
/// `values.yaml` by a downwardAPI volume (values up to [`VALUES_ANNOTATION_LIMIT`]).
pub const ANNOTATION_VALUES: &str = "providers.platform.dev/values";
/// The largest values text carried in [`ANNOTATION_VALUES`]; the API server allows 256 KiB
/// of annotations in all. Larger values travel in a values Secret, as before.
pub const VALUES_ANNOTATION_LIMIT: usize = 128 * 1024;
/// The attempt number, on Jobs, for people reading them.
pub const ANNOTATION_ATTEMPT: &str = "providers.platform.dev/attempt";

/// Where the values Secret is mounted in the runner's container.
pub const VALUES_MOUNT_PATH: &str = "/etc/providers/values";
/// The key of the values Secret, and the file name under [`VALUES_MOUNT_PATH`].
pub const VALUES_FILE: &str = "values.yaml";
/// A writable scratch folder for helm's cache and config (the root file system is read-only).
pub const SCRATCH_MOUNT_PATH: &str = "/tmp";

/// The names of one attempt's objects on the edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptNames {
    /// The Job (the plan's `job`).
    pub job: String,
    /// The ServiceAccount, Role and RoleBinding of the attempt's runner.
    pub runner: String,
    /// The Secret holding `values.yaml`.
    pub values: String,
}

impl AttemptNames {
    /// The names derived from the attempt's Job name.
    pub fn for_job(job: &str) -> Self {
        Self {
            job: job.to_owned(),
            runner: bounded(job, "-runner", 253),
            values: bounded(job, "-values", 253),
        }
    }
}

/// The names of the provider's runtime credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CredentialNames {
    /// The hub namespace (the organization) of the ServiceAccount and RoleBinding.
    pub hub_namespace: String,
    /// The hub ServiceAccount, also the name of its RoleBinding.
    pub service_account: String,
    /// The Secret in the release namespace on the edge that holds its kubeconfig.
    pub edge_secret: String,
}

impl CredentialNames {
    /// The names for a Workspace: the edge Secret's name is the one the webhook put into
    /// the plan's values, so the chart finds it.
    pub fn for_workspace(org: &str, workspace: &str) -> Self {
        Self {
            hub_namespace: org.to_owned(),
            service_account: bounded("provider-", workspace, 253),
            edge_secret: crate::plan::runtime_credential_secret(workspace),
        }
    }
}

/// `head` followed by `tail`, at most `max` characters: a long head is cut and marked with
/// a short hash of itself, so different heads never collide after cutting.
/// The ConfigMap in the organization's namespace on the hub that keeps a Workspace's runner
/// logs (`kubectl provider logs`): long names end in a hash, never in a cut that two
/// Workspaces could share.
pub fn runner_logs(workspace: &str) -> String {
    bounded("provider-logs-", workspace, 253)
}

fn bounded(head: &str, tail: &str, max: usize) -> String {
    let name = format!("{head}{tail}");
    if name.len() <= max {
        return name;
    }
    let digest = hex::encode(&Sha256::digest(name.as_bytes())[..4]);
    let keep = max.saturating_sub(digest.len() + 1);
    let cut: String = name.chars().take(keep).collect();
    format!("{}-{digest}", cut.trim_end_matches(['-', '.']))
}

/// A string as a label value: itself when it is one already, otherwise a hash of it.
pub fn label_value(text: &str) -> String {
    let valid = text.len() <= 63
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && text
            .chars()
            .next()
            .is_none_or(|c| c.is_ascii_alphanumeric())
        && text
            .chars()
            .last()
            .is_none_or(|c| c.is_ascii_alphanumeric());
    if valid {
        text.to_owned()
    } else {
        hex::encode(&Sha256::digest(text.as_bytes())[..16])
    }
}

/// `<organization>/<name>`: the value of [`ANNOTATION_WORKSPACE`].
pub fn workspace_key(org: &str, name: &str) -> String {
    crate::text::object_key(org, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_names_derive_from_the_job() {
        let names = AttemptNames::for_job("demo-0a1b2c3d-1");
        assert_eq!(names.runner, "demo-0a1b2c3d-1-runner");
        assert_eq!(names.values, "demo-0a1b2c3d-1-values");
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let long = "x".repeat(300);
        let name = bounded(&long, "-runner", 253);
        assert!(name.len() <= 253, "{}", name.len());
        assert_ne!(name, bounded(&format!("{long}y"), "-runner", 253));
    }

    #[test]
    fn label_values_are_kept_or_hashed() {
        assert_eq!(label_value("abc-123"), "abc-123");
        assert_eq!(label_value("has/slash").len(), 32);
        assert_eq!(label_value(&"a".repeat(64)).len(), 32);
    }
}
