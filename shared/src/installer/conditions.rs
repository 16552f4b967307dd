//! The phase and the conditions, by the Kubernetes conventions: `lastTransitionTime`
//! changes only when a condition's status changes.
//!
//! Ready, Progressing and Failed say what the installer is doing. Reconciling and Stalled
//! say the same in the words kstatus reads (Flux's health checks, `kubectl wait`-style
//! tools built on cli-utils), which ignore Ready: Reconciling=True reads as InProgress,
//! Stalled=True as Failed, neither as Current. Those two are present only while True:
//! kstatus reads an absent one as False, and whenever Ready is not True one of them is
//! (docs/adr/0033).

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};

use crate::api::{JobResult, Phase, WorkspaceStatus};

/// Condition reasons.
pub mod reason {
    pub const AWAITING_PLAN: &str = "AwaitingPlan";
    pub const KEYS_UNAVAILABLE: &str = "SealingKeysUnavailable";
    pub const EDGE_NOT_READY: &str = "EdgeNotReady";
    pub const EDGE_UNREACHABLE: &str = "EdgeUnreachable";
    pub const PREPARING: &str = "Preparing";
    pub const JOB_RUNNING: &str = "JobRunning";
    pub const CLEANING_UP: &str = "CleaningUp";
    pub const INSTALLED: &str = "Installed";
    pub const JOB_FAILED: &str = "JobFailed";
    pub const JOB_LOST: &str = "JobLost";
    pub const JOB_CONFLICT: &str = "JobConflict";
    pub const SEAL_INVALID: &str = "SealInvalid";
    pub const VALUES_INVALID: &str = "ValuesInvalid";
    pub const VALUES_UNAVAILABLE: &str = "ValuesUnavailable";
    pub const NAMESPACE_NOT_ADMITTED: &str = "NamespaceNotAdmitted";
    pub const NAMESPACE_TERMINATING: &str = "NamespaceTerminating";
    pub const TARGET_MISMATCH: &str = "TargetMismatch";
    pub const NOT_AUTHORIZED: &str = "NotAuthorized";
    pub const AUTHORIZATION_UNAVAILABLE: &str = "AuthorizationUnavailable";
    pub const SUPERSEDED: &str = "Superseded";
    pub const WAITING_FOR_PREVIOUS_ATTEMPT: &str = "WaitingForPreviousAttempt";
    pub const WAITING_FOR_ORPHAN_SWEEP: &str = "WaitingForOrphanSweep";
    pub const DELETING: &str = "Deleting";
}

/// The condition types.
pub const READY: &str = "Ready";
pub const PROGRESSING: &str = "Progressing";
pub const FAILED: &str = "Failed";
/// True until the attempt has a result and is cleaned up, unless it failed (kstatus:
/// InProgress); absent otherwise.
pub const RECONCILING: &str = "Reconciling";
/// True when the attempt failed, or its release drifted, and only a person can move it on
/// (kstatus: Failed); absent otherwise.
pub const STALLED: &str = "Stalled";
/// Whether the installed release still is what the attempt left on the edge; present once
/// an attempt succeeded.
pub const DRIFTED: &str = "Drifted";

/// What the Workspace is doing, as the conditions say it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    pub reason: String,
    pub message: String,
    /// Whether work is under way (Progressing=True).
    pub progressing: bool,
}

impl Activity {
    pub fn busy(reason: &str, message: impl Into<String>) -> Self {
        Self {
            reason: reason.to_owned(),
            message: message.into(),
            progressing: true,
        }
    }

    pub fn idle(reason: &str, message: impl Into<String>) -> Self {
        Self {
            reason: reason.to_owned(),
            message: message.into(),
            progressing: false,
        }
    }
}

/// A recorded failure: the Failed condition's reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub reason: String,
    pub message: String,
}

impl Failure {
    pub fn new(reason: &str, message: impl Into<String>) -> Self {
        Self {
            reason: reason.to_owned(),
            message: message.into(),
        }
    }
}

/// Sets the phase and conditions of `status` from its recorded facts, the activity of this
/// decision and the failure of the attempt, if it failed.
pub fn settle(
    status: &mut WorkspaceStatus,
    generation: Option<i64>,
    now: Timestamp,
    activity: &Activity,
    failure: Option<&Failure>,
) {
    status.phase = Some(phase_of(status));
    status.observed_generation = generation;
    let installed =
        status.job_result == Some(JobResult::Succeeded) && status.cleaned_up && !status.deleting;
    // Drift is a failure a person acts on (kubectl provider repair): Ready goes False and
    // Stalled True with its words.
    let drift = status
        .drift
        .clone()
        .filter(|_| installed)
        .map(|d| Failure::new(&d.reason, d.message));
    // Automatic repair that stopped is what a person must act on.
    let repair_loop = status
        .drift
        .as_ref()
        .filter(|d| installed && super::drift::repair_stopped(d))
        .map(|d| {
            Failure::new(
                super::drift::REPAIR_LOOP,
                format!(
                    "automatic repair stopped: the release drifted again within the quiet period after an automatic repair. {}",
                    d.message
                ),
            )
        });
    let stalled = failure.or(repair_loop.as_ref()).or(drift.as_ref());
    let (ready_reason, ready_message) = match (&drift, installed) {
        (Some(drift), _) => (drift.reason.as_str(), drift.message.as_str()),
        (None, true) => (reason::INSTALLED, activity.message.as_str()),
        (None, false) => (activity.reason.as_str(), activity.message.as_str()),
    };
    upsert(
        status,
        READY,
        installed && drift.is_none(),
        ready_reason,
        ready_message,
        generation,
        now,
    );
    if installed && (status.release.is_some() || drift.is_some()) {
        let (why, message) = match &drift {
            Some(drift) => (drift.reason.as_str(), drift.message.clone()),
            None => (
                super::drift::reason::IN_SYNC,
                status
                    .release
                    .as_ref()
                    .map(|r| {
                        format!(
                            "release {} is at revision {}, as the installed attempt left it",
                            r.name, r.revision
                        )
                    })
                    .unwrap_or_default(),
            ),
        };
        upsert(
            status,
            DRIFTED,
            drift.is_some(),
            why,
            &message,
            generation,
            now,
        );
    } else {
        // Until the next attempt is installed, there is nothing to drift from.
        status.conditions.retain(|c| c.type_ != DRIFTED);
    }
    upsert(
        status,
        PROGRESSING,
        activity.progressing,
        &activity.reason,
        &activity.message,
        generation,
        now,
    );
    // Failed is about the attempt; Stalled also about its release (drift).
    let (failed_reason, failed_message) = match failure {
        Some(why) => (why.reason.as_str(), why.message.as_str()),
        None => (activity.reason.as_str(), activity.message.as_str()),
    };
    upsert(
        status,
        FAILED,
        failure.is_some(),
        failed_reason,
        failed_message,
        generation,
        now,
    );
    // kstatus reads an absent Stalled or Reconciling as False, and whenever Ready is not
    // True one of the two is: they are written only while True (docs/adr/0033).
    match stalled {
        Some(why) => upsert(
            status,
            STALLED,
            true,
            &why.reason,
            &why.message,
            generation,
            now,
        ),
        None => status.conditions.retain(|c| c.type_ != STALLED),
    }
    if !installed && failure.is_none() {
        upsert(
            status,
            RECONCILING,
            true,
            ready_reason,
            ready_message,
            generation,
            now,
        );
    } else {
        status.conditions.retain(|c| c.type_ != RECONCILING);
    }
}

/// The phase from the recorded facts.
pub fn phase_of(status: &WorkspaceStatus) -> Phase {
    if status.deleting {
        Phase::Deleting
    } else {
        match status.job_result {
            Some(JobResult::Succeeded) => Phase::Succeeded,
            Some(JobResult::Failed | JobResult::Rejected) => Phase::Failed,
            None if status.job_uid.is_some() || status.preparation.is_some() => Phase::Progressing,
            None => Phase::Pending,
        }
    }
}

/// The recorded failure of the attempt, from the Failed condition already in status.
pub fn recorded_failure(status: &WorkspaceStatus) -> Option<Failure> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == FAILED && c.status == "True")
        .map(|c| Failure::new(&c.reason, c.message.clone()))
}

fn upsert(
    status: &mut WorkspaceStatus,
    kind: &str,
    value: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) {
    // Progressing and Failed speak when they are True; False, their reason says enough,
    // and Ready carries the sentence. The same sentence twice more would make every status
    // write of every Workspace longer for the API server to decode, validate, store and
    // send to every watcher.
    let message = if value || matches!(kind, READY | DRIFTED) {
        message
    } else {
        ""
    };
    let value = if value { "True" } else { "False" };
    let existing = status.conditions.iter_mut().find(|c| c.type_ == kind);
    match existing {
        Some(condition) => {
            if condition.status != value {
                condition.status = value.to_owned();
                condition.last_transition_time = Time(now);
            }
            condition.reason = reason.to_owned();
            condition.message = message.to_owned();
            condition.observed_generation = generation;
        }
        None => status.conditions.push(Condition {
            type_: kind.to_owned(),
            status: value.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            observed_generation: generation,
            last_transition_time: Time(now),
        }),
    }
}

#[cfg(test)]
mod tests;
