//! The identifiers derived for an attempt: its ID, its Job's name and the name of the
//! edge Secret that carries the provider's hub credential.

use sha2::{Digest, Sha256};

use crate::api::{WorkspaceIdentity, WorkspaceSpec};

/// The attempt ID: a digest of everything that starts the attempt - the Workspace, the
/// attempt number, the stored object's resourceVersion the write applies to (empty on
/// create), the tenant's intent and who asked. The mutating webhook is therefore
/// deterministic (it may be called twice for one request), and the validating webhook can
/// recompute it: a plan sealed for any other request (a dry run, an earlier state, another
/// user) does not match.
pub fn attempt_id(
    workspace: &WorkspaceIdentity,
    attempt: i64,
    old_resource_version: &str,
    intent: &WorkspaceSpec,
    user: &str,
) -> String {
    let intent = serde_json::json!({
        "recipe": intent.recipe,
        "edge": intent.edge,
        "version": intent.version,
        "values": intent.values,
        "retry": intent.retry.unwrap_or(0),
    });
    let digest = Sha256::new()
        .chain_update(workspace.namespace.as_bytes())
        .chain_update([0])
        .chain_update(workspace.name.as_bytes())
        .chain_update([0])
        .chain_update(attempt.to_be_bytes())
        .chain_update(old_resource_version.as_bytes())
        .chain_update([0])
        .chain_update(crate::canonical::to_vec(&intent))
        .chain_update([0])
        .chain_update(user.as_bytes())
        .finalize();
    hex::encode(&digest[..12])
}

/// The Job's name on the edge: deterministic, so a restarted installer finds the Job it
/// made instead of making a second one. At most 63 characters (a Job name becomes a label).
pub fn job_name(workspace: &WorkspaceIdentity, release: &str, attempt: i64) -> String {
    let digest = Sha256::new()
        .chain_update(workspace.namespace.as_bytes())
        .chain_update([0])
        .chain_update(workspace.name.as_bytes())
        .finalize();
    let suffix = format!("-{}-{attempt}", &hex::encode(digest)[..8]);
    let head: String = release.chars().take(63 - suffix.len()).collect();
    format!("{}{suffix}", head.trim_end_matches('-'))
}

/// The Secret on the edge that carries the provider's hub credential.
pub fn runtime_credential_secret(workspace_name: &str) -> String {
    let head: String = workspace_name.chars().take(40).collect();
    format!("{head}-hub-credential")
}
