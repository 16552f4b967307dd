//! When a release's content check is due: rule `content_check_due`.

use k8s_openapi::jiff::Timestamp;

/// How long before the installer began watching an edge an attempt may have ended and
/// still be checked at once.
const SEEN_ENDING_SLACK_SECONDS: i64 = 60;

/// Which content check of an installed revision is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckDue {
    /// The first after the attempt, which this process saw end: what it finds helm
    /// alone wrote otherwise is helm's own reading (rule
    /// `helm_s_own_reading_is_the_baseline`).
    AfterAttempt,
    /// One of the interval's (or the first after a restart).
    Periodic,
}

/// Whether a content check of the installed revision is due now, and which. `last` is
/// when this process last checked it; without one, a check is due at once when the
/// attempt ended while the process watched the edge (after every attempt, automatic
/// repairs too), and otherwise (after a restart) at a point of the interval spread by the
/// Workspace's UID, so that ten thousand releases are not checked in the same minute.
pub fn content_check_due(
    interval_seconds: u64,
    last: Option<Timestamp>,
    finished_at: Option<Timestamp>,
    watching_since: Timestamp,
    now: Timestamp,
    uid: &str,
) -> Option<CheckDue> {
    if interval_seconds == 0 {
        return None;
    }
    let seconds = |at: Timestamp| at.as_second();
    let due = match last {
        Some(last) => seconds(now) >= seconds(last).saturating_add(interval_seconds as i64),
        // The Job's completion is in whole seconds, on the edge's clock: an attempt that
        // ended shortly before the watching began counts as seen ending.
        None if finished_at
            .is_some_and(|f| seconds(f) >= seconds(watching_since) - SEEN_ENDING_SLACK_SECONDS) =>
        {
            return Some(CheckDue::AfterAttempt);
        }
        None => {
            let spread = uid
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b.into()))
                % interval_seconds;
            seconds(now) >= seconds(watching_since).saturating_add(spread as i64)
        }
    };
    due.then_some(CheckDue::Periodic)
}
