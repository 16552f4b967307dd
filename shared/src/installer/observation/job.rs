//! What the installer reads of an attempt's Job on the edge: its outcome by its terminal
//! conditions, and the runner Pod that ran it.

use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::Time};

use super::object::{ObjectState, state_of};

/// The attempt's Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobState {
    pub object: ObjectState,
    pub outcome: JobOutcome,
    /// When it completed or failed.
    pub finished_at: Option<Time>,
    /// Its runner Pod, read once the Job has failed (for helm's own words).
    pub runner: Option<RunnerPod>,
}

/// The Pod that ran an attempt's Job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunnerPod {
    /// The Pod's name: where the runner's log is read from.
    pub name: String,
    /// Its container's termination message: the end of helm's output when it failed
    /// (`terminationMessagePolicy: FallbackToLogsOnError`).
    pub message: Option<String>,
}

/// Where a Job stands, by its terminal conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    /// No terminal condition yet.
    Running,
    /// `Complete` is True.
    Succeeded,
    /// `Failed` is True: its reason and message.
    Failed { reason: String, message: String },
}

/// The state of a Job from its conditions.
pub fn job_state(job: &Job) -> JobState {
    let conditions = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let is_true = |kind: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == kind && c.status == "True")
    };
    let (outcome, finished_at) = if is_true("Complete").is_some() {
        let at = job.status.as_ref().and_then(|s| s.completion_time.clone());
        (JobOutcome::Succeeded, at)
    } else if let Some(failed) = is_true("Failed") {
        (
            JobOutcome::Failed {
                reason: failed.reason.clone().unwrap_or_default(),
                message: failed.message.clone().unwrap_or_default(),
            },
            failed.last_transition_time.clone(),
        )
    } else {
        (JobOutcome::Running, None)
    };
    JobState {
        object: state_of(job),
        outcome,
        finished_at,
        runner: None,
    }
}

/// The runner Pod of a Job, from the Pods labelled with the Job's name: the newest one,
/// with its `helm` container's termination message.
pub fn runner_pod(pods: &[k8s_openapi::api::core::v1::Pod]) -> Option<RunnerPod> {
    let pod = pods
        .iter()
        .max_by_key(|p| p.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
    let message = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == "helm"))
        .and_then(|c| c.state.as_ref()?.terminated.as_ref()?.message.clone())
        .filter(|m| !m.trim().is_empty());
    Some(RunnerPod {
        name: pod.metadata.name.clone().unwrap_or_default(),
        message,
    })
}
