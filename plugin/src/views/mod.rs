//! What each command shows: plain functions from API objects to a [`Rendered`] result.
//!
//! [`Rendered`]: crate::output::Rendered

pub mod edges;
pub mod events;
pub mod keys;
pub mod plan;
pub mod recipes;
pub mod workspaces;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};

/// The age of a timestamp at `now`, as kubectl prints it; `<unknown>` without one.
pub fn age(now: Timestamp, then: Option<&Time>) -> String {
    match then {
        Some(Time(then)) => {
            let seconds = now.as_second().saturating_sub(then.as_second()).max(0);
            crate::duration::human(std::time::Duration::from_secs(seconds.unsigned_abs()))
        }
        None => "<unknown>".to_owned(),
    }
}

/// A timestamp as RFC 3339 in UTC, second precision.
pub fn timestamp(time: Option<&Time>) -> String {
    time.map(|Time(t)| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| "-".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_count_from_now() {
        let now: Timestamp = "2025-01-01T01:00:00Z".parse().unwrap();
        let then = Time("2025-01-01T00:58:30Z".parse().unwrap());
        assert_eq!(age(now, Some(&then)), "90s");
        assert_eq!(age(now, None), "<unknown>");
        // A clock behind the server's never shows a negative age.
        let future = Time("2025-01-01T01:00:05Z".parse().unwrap());
        assert_eq!(age(now, Some(&future)), "0s");
        assert_eq!(timestamp(Some(&then)), "2025-01-01T00:58:30Z");
    }
}
