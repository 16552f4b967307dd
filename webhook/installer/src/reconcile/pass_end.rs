//! How one pass of a reconcile ends: the one answer a pass gives the reconcile that runs
//! it, whatever step it stopped at (observing, running the actions) and whatever the
//! decision said comes next.

use std::time::Duration;

use providers_shared::installer::Next;

use crate::support::{error::Error, stop::Stop};

/// How a pass ends.
#[derive(Debug, PartialEq, Eq)]
pub enum PassEnd {
    /// Observe and decide again now, from the Workspace as the pass left it.
    Again,
    /// Observe and decide again now, from the Workspace read live first: a write found
    /// what it was based on changed.
    AgainFromLive,
    /// Observe and decide again now, with the edge seen unreachable for this reason.
    AgainEdgeDown(String),
    /// The Workspace is gone from the hub: nothing more to do for it.
    Gone,
    /// This reconcile is over: look again as `Wait` says.
    Wait(Wait),
}

/// When a reconcile that is over looks again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// When something changes: another replica holds the edge now.
    Change,
    /// At the periodic resync, unless something changes first.
    Resync,
    /// After this long, at most the resync.
    After(Duration),
    /// A transient problem (the edge is unreachable): after growing delays.
    Backoff,
}

/// How a pass ends, from where its steps stopped (`Ok`: every action ran) and the
/// decision's `next`. Only a failure is an error.
pub fn end_of(stopped: Result<(), Stop>, next: Next) -> Result<PassEnd, Error> {
    match stopped {
        Err(Stop::Failed(error)) => Err(error),
        Err(Stop::Interrupted { .. }) => Ok(PassEnd::AgainFromLive),
        Err(Stop::EdgeDown { message, .. }) => Ok(PassEnd::AgainEdgeDown(message)),
        Err(Stop::EdgeNotHeld { .. }) => Ok(PassEnd::Wait(Wait::Change)),
        Ok(()) => Ok(match next {
            Next::Continue => PassEnd::Again,
            Next::Idle => PassEnd::Wait(Wait::Resync),
            Next::After(seconds) => PassEnd::Wait(Wait::After(Duration::from_secs(seconds))),
            Next::Backoff => PassEnd::Wait(Wait::Backoff),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_whose_actions_all_ran_ends_as_the_decision_says() {
        assert_eq!(end_of(Ok(()), Next::Continue).unwrap(), PassEnd::Again);
        assert_eq!(
            end_of(Ok(()), Next::Idle).unwrap(),
            PassEnd::Wait(Wait::Resync)
        );
        assert_eq!(
            end_of(Ok(()), Next::After(7)).unwrap(),
            PassEnd::Wait(Wait::After(Duration::from_secs(7)))
        );
        assert_eq!(
            end_of(Ok(()), Next::Backoff).unwrap(),
            PassEnd::Wait(Wait::Backoff)
        );
    }

    #[test]
    fn a_pass_that_stopped_short_ends_by_why_whatever_the_decision_said() {
        let interrupted = Stop::Interrupted {
            action: "write-status",
            message: "the UID changed".into(),
        };
        assert_eq!(
            end_of(Err(interrupted), Next::Idle).unwrap(),
            PassEnd::AgainFromLive
        );
        let down = Stop::EdgeDown {
            edge: "edge-1".into(),
            message: "no client for the edge".into(),
        };
        assert_eq!(
            end_of(Err(down), Next::Idle).unwrap(),
            PassEnd::AgainEdgeDown("no client for the edge".into())
        );
        let not_held = Stop::EdgeNotHeld {
            edge: "edge-1".into(),
        };
        assert_eq!(
            end_of(Err(not_held), Next::Continue).unwrap(),
            PassEnd::Wait(Wait::Change)
        );
        let failed = Stop::Failed(Error::ReleaseRecord {
            secret: "sh.helm.release.v1.r.v1".into(),
            message: "not gzip".into(),
        });
        assert!(matches!(
            end_of(Err(failed), Next::Continue),
            Err(Error::ReleaseRecord { .. })
        ));
    }
}
