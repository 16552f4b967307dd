//! The content check a pass of an installed release makes when one is due (ADR 47): at
//! once after the attempt, then once per `--drift-content-interval`, spread over the
//! interval after a restart. Between checks, the pass decides with the newest one.

use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use providers_shared::{
    api::{Workspace, WorkspaceStatus},
    installer::{
        ObjectSeen, ReleaseRevision, Settings,
        drift::contents::{CheckDue, ContentFindings, content_check_due},
        release_objects::ReleaseObject,
    },
};

use crate::{
    edge::content_check::{ContentReads, ReleaseManifest, check_contents},
    reconcile::prepare::FollowedObjects,
    support::metrics::{Metrics, ReasonLabels},
    support::stop::Stop,
};

/// The installed revision, its objects and what the metadata watches show of them.
pub struct InstalledObjects<'a> {
    pub revision: &'a ReleaseRevision,
    pub followed: &'a FollowedObjects,
    pub seen: &'a [(ReleaseObject, ObjectSeen)],
}

/// The newest content check of the installed revision: made now when one is due (rule
/// `content_check_due`), else the one this process made last, if any.
pub async fn when_due(
    reads: &ContentReads<'_>,
    status: &WorkspaceStatus,
    workspace: &Workspace,
    installed: InstalledObjects<'_>,
    settings: &Settings,
    metrics: &Metrics,
) -> Result<Option<Arc<ContentFindings>>, Stop> {
    let InstalledObjects {
        revision,
        followed,
        seen,
    } = installed;
    let last = reads.cache.content_check(&revision.uid);
    let due = content_check_due(
        settings.content_check_interval_seconds,
        last.as_ref().map(|l| l.checked_at),
        status.finished_at.as_ref().map(|f| f.0),
        reads.cache.watching_since(),
        Timestamp::now(),
        workspace.metadata.uid.as_deref().unwrap_or_default(),
    );
    let Some(due) = due else {
        return Ok(last);
    };
    let release = ReleaseManifest {
        objects: followed.objects.clone(),
        unfollowed: &followed.unfollowed,
        manifest: followed.manifest.clone(),
    };
    let checked = check_contents(
        reads,
        revision,
        release,
        seen,
        due == CheckDue::AfterAttempt,
    )
    .await?;
    tracing::debug!(record = %revision.uid, objects = ?checked.objects, "compared contents");
    for (_, seen) in &checked.objects {
        let reason = seen.name().to_owned();
        metrics
            .content_checked
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }
    let findings = Arc::new(checked);
    reads.cache.keep_content_check(findings.clone());
    Ok(Some(findings))
}
