//! Which attempt a decision is about, and so what the shell must read before deciding.
//!
//! A Workspace that is installed and cleaned up needs only its release's records, from the
//! edge's watch cache: a resync of a thousand settled Workspaces makes no edge calls.

use crate::api::{JobResult, Plan, Workspace, WorkspaceStatus};

use super::names::{AttemptNames, CredentialNames};

/// The attempt a decision is about and what to read for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptReads {
    pub attempt: i64,
    pub attempt_id: String,
    /// The Edge the attempt runs on.
    pub edge: String,
    /// The release namespace on the edge.
    pub namespace: String,
    /// The attempt's objects on the edge.
    pub names: AttemptNames,
    /// The Helm release whose storage records to read: while the attempt prepares (a
    /// revision left pending), when its Job ends (the revision it made), and once installed
    /// (drift).
    pub release: Option<String>,
    /// The attempt is installed and cleaned up: only its release is read, for drift.
    pub installed: bool,
    /// The runtime credential objects to read, while the attempt prepares.
    pub credential: Option<CredentialNames>,
    /// Read the Job alone first: while it runs, nothing else of the edge is needed. When
    /// it is not (or no longer) running, everything is read.
    pub job_first: bool,
    /// Ask RBAC again, as the plan's owner, whether they may install onto the plan's edge:
    /// the attempt has no preparation yet, so the next step may use the edge credential.
    pub authorize: bool,
    /// The PlanValues object to read and check, while the attempt prepares: nothing is
    /// created on the edge for a plan whose values are not exactly the sealed ones.
    pub values: Option<String>,
}

/// The attempt recorded in status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub attempt: i64,
    pub attempt_id: String,
    pub job: String,
    pub edge: String,
    pub namespace: String,
}

/// The attempt recorded in status, when there is one with a target.
pub fn recorded(status: &WorkspaceStatus) -> Option<Recorded> {
    let target = status.target.as_ref()?;
    Some(Recorded {
        attempt: status.attempt?,
        attempt_id: status.attempt_id.clone()?,
        job: status.job.clone()?,
        edge: target.edge.clone(),
        namespace: target.namespace.clone(),
    })
}

/// Whether the recorded attempt is the sealed one.
pub fn is_sealed_attempt(recorded: &Recorded, plan: &Plan) -> bool {
    recorded.attempt == plan.attempt && recorded.attempt_id == plan.attempt_id
}

/// Whether the sealed plan is the recorded attempt and has its preparation record (which
/// is written before anything of the attempt is created on the edge) or a result.
fn prepared_for(status: &WorkspaceStatus, recorded: Option<&Recorded>, plan: &Plan) -> bool {
    recorded.is_some_and(|r| is_sealed_attempt(r, plan))
        && (status.preparation.is_some() || status.job_uid.is_some() || status.job_result.is_some())
}

/// What a decision about `workspace` needs to read; `None` when it needs nothing from
/// the edge.
pub fn attempt_reads(workspace: &Workspace) -> Option<AttemptReads> {
    let status = workspace.status.clone().unwrap_or_default();
    let plan = workspace.spec.plan.as_ref().map(|sealed| &sealed.plan);
    let recorded = recorded(&status);
    // A recorded Job without a result: it runs, as far as the status knows.
    let running = status.job_uid.is_some() && status.job_result.is_none();
    let of_recorded = |r: &Recorded, job_first: bool| AttemptReads {
        attempt: r.attempt,
        attempt_id: r.attempt_id.clone(),
        edge: r.edge.clone(),
        namespace: r.namespace.clone(),
        names: AttemptNames::for_job(&r.job),
        release: None,
        installed: false,
        credential: None,
        job_first,
        authorize: false,
        values: None,
    };
    if workspace.metadata.deletion_timestamp.is_some() {
        // Deletion needs the edge only where something may be there to clean up.
        if super::left_on_edge::abandoned(workspace).is_some()
            || !super::left_on_edge::edge_touched(&status)
        {
            return None;
        }
        return recorded.as_ref().map(|r| of_recorded(r, false));
    }
    if let Some(attempt) = &recorded {
        let current = plan.is_some_and(|p| is_sealed_attempt(attempt, p));
        if !current && !status.cleaned_up {
            return Some(of_recorded(attempt, running));
        }
        if current && status.cleaned_up {
            // Installed: its release is watched for drift, from the edge's cache. A failed
            // or refused attempt needs nothing more.
            let plan = plan?;
            return (status.job_result == Some(JobResult::Succeeded)).then(|| AttemptReads {
                installed: true,
                ..of_plan(plan)
            });
        }
    }
    let plan = plan?;
    let preparing = recorded
        .as_ref()
        .is_none_or(|r| !is_sealed_attempt(r, plan))
        || (status.job_uid.is_none() && status.job_result.is_none());
    Some(AttemptReads {
        credential: plan
            .runtime_credential
            .as_ref()
            .filter(|_| preparing)
            .map(|_| CredentialNames::for_workspace(&plan.org, &plan.workspace.name)),
        job_first: !preparing && running,
        authorize: preparing && !prepared_for(&status, recorded.as_ref(), plan),
        values: match crate::plan_values::source_of(plan) {
            crate::plan_values::Source::Stored { digest } if preparing => Some(
                crate::plan_values::object_name(&plan.workspace.name, digest),
            ),
            _ => None,
        },
        ..of_plan(plan)
    })
}

/// The sealed attempt's place on the edge, its objects and its release, with nothing more
/// to read or ask.
fn of_plan(plan: &Plan) -> AttemptReads {
    AttemptReads {
        attempt: plan.attempt,
        attempt_id: plan.attempt_id.clone(),
        edge: plan.edge_name.clone(),
        namespace: plan.namespace.clone(),
        names: AttemptNames::for_job(&plan.job),
        release: Some(plan.release.clone()),
        installed: false,
        credential: None,
        job_first: false,
        authorize: false,
        values: None,
    }
}
