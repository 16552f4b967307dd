//! The Events section of `status NAME`, as `kubectl describe` ends with one: the most recent
//! Events about the Workspace, oldest first, with type, reason, age, source and message.

use k8s_openapi::{api::core::v1::Event, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};

use crate::{
    table::{Table, col},
    views::age,
};

/// How many Events `status NAME` shows: the most recent ones.
pub const SHOWN: usize = 10;

/// When an Event last happened: its series' last observation, its last timestamp, its
/// event time, or when it was recorded.
fn last_seen(event: &Event) -> Option<Time> {
    event
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref())
        .map(|t| Time(t.0))
        .or_else(|| event.last_timestamp.clone())
        .or_else(|| event.event_time.as_ref().map(|t| Time(t.0)))
        .or_else(|| event.metadata.creation_timestamp.clone())
}

/// When an Event first happened.
fn first_seen(event: &Event) -> Option<Time> {
    event
        .first_timestamp
        .clone()
        .or_else(|| event.event_time.as_ref().map(|t| Time(t.0)))
        .or_else(|| event.metadata.creation_timestamp.clone())
}

/// How often it happened.
fn count(event: &Event) -> i32 {
    event
        .series
        .as_ref()
        .and_then(|s| s.count)
        .or(event.count)
        .unwrap_or(1)
}

/// The `limit` most recent Events, oldest first.
pub fn most_recent(mut events: Vec<Event>, limit: usize) -> Vec<Event> {
    events.sort_by_key(|e| last_seen(e).map(|Time(t)| t));
    let skip = events.len().saturating_sub(limit);
    events.split_off(skip)
}

/// The section's text; nothing when there are no Events (the existing status layout ends
/// with Next: then).
pub fn events_section(events: &[Event], now: Timestamp) -> String {
    if events.is_empty() {
        return String::new();
    }
    let mut table = Table::new(&[
        col("TYPE"),
        col("REASON"),
        col("AGE"),
        col("FROM"),
        col("MESSAGE"),
    ]);
    for event in events {
        let last = age(now, last_seen(event).as_ref());
        let seen = match count(event) {
            times if times > 1 => format!(
                "{last} (x{times} over {})",
                age(now, first_seen(event).as_ref())
            ),
            _ => last,
        };
        let from = event
            .reporting_component
            .clone()
            .filter(|c| !c.is_empty())
            .or_else(|| event.source.as_ref().and_then(|s| s.component.clone()))
            .unwrap_or_default();
        // Anyone who may write Events in the namespace writes these words: plain text only.
        let message = providers_shared::text::for_terminal(event.message.as_deref().unwrap_or(""));
        table.push(vec![
            event.type_.clone().unwrap_or_default(),
            event.reason.clone().unwrap_or_default(),
            seen,
            providers_shared::text::for_terminal(&from),
            message.trim().to_owned(),
        ]);
    }
    format!("Events:\n{}", table.render_indented(false, "  "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(reason: &str, last: &str, count: i32, message: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("demo.{reason}"), "namespace": "org-a"},
            "involvedObject": {"kind": "Workspace", "name": "demo", "namespace": "org-a"},
            "type": "Normal", "reason": reason, "message": message, "count": count,
            "firstTimestamp": "2025-01-01T00:00:00Z", "lastTimestamp": last,
            "source": {"component": "providers-installer"}
        }))
        .unwrap()
    }

    fn now() -> Timestamp {
        "2025-01-01T00:10:00Z".parse().unwrap()
    }

    #[test]
    fn the_most_recent_events_oldest_first() {
        let events = vec![
            event("Late", "2025-01-01T00:09:00Z", 1, "c"),
            event("Early", "2025-01-01T00:01:00Z", 1, "a"),
            event("Middle", "2025-01-01T00:05:00Z", 1, "b"),
        ];
        let reasons: Vec<String> = most_recent(events, 2)
            .into_iter()
            .filter_map(|e| e.reason)
            .collect();
        assert_eq!(reasons, ["Middle", "Late"]);
    }

    #[test]
    fn the_section_reads_like_kubectl_describe() {
        let events = vec![
            event(
                "AttemptSealed",
                "2025-01-01T00:05:00Z",
                1,
                "attempt 1 sealed",
            ),
            event(
                "JobFailed",
                "2025-01-01T00:09:00Z",
                3,
                "helm exited 1\u{1b}]0;title\u{7}\n",
            ),
        ];
        assert_eq!(
            events_section(&events, now()),
            "\
Events:
  TYPE     REASON          AGE                 FROM                  MESSAGE
  Normal   AttemptSealed   5m                  providers-installer   attempt 1 sealed
  Normal   JobFailed       60s (x3 over 10m)   providers-installer   helm exited 1
"
        );
        assert_eq!(events_section(&[], now()), "");
    }
}
