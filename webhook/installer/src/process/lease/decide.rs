//! The leader election's decisions, as pure functions of the Lease read, this replica's
//! identity, the time (this replica's monotonic clock, and the wall clock written into the
//! Lease) and the configured durations. `super::Elector` only reads, writes and waits.

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
};
use tokio::time::Instant;

use crate::support::config::LeaseConfig;

/// The shortest time a renewal is given, however little of the renew deadline is left.
const MIN_RENEW_BUDGET: Duration = Duration::from_millis(100);

/// The holder and renew time this replica last saw on the Lease, and when it first saw
/// them: a holder's silence is measured on this replica's clock, never on the clock of the
/// replica that wrote the renew time, so clock skew between replicas does not matter.
#[derive(Clone, Debug, PartialEq)]
pub struct HolderSeen {
    pub holder: String,
    pub renew_time: Option<MicroTime>,
    pub since: Instant,
}

/// What to do about the Lease, decided from one read of it.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// There is no Lease: create it, held by this replica (acquire).
    Create(Lease),
    /// The Lease has no holder, or its holder has not renewed it for a whole lease
    /// duration: take it with this write, which carries the resourceVersion read, so that
    /// of two candidates only one wins (acquire). `previous` is the holder it is taken
    /// from, empty when it had none.
    Take { lease: Lease, previous: String },
    /// This replica holds the Lease: renew it with this write (also conditional on the
    /// resourceVersion read).
    Renew(Lease),
    /// Another replica holds the Lease and renewed it less than a lease duration ago.
    Wait,
}

/// How one attempt to take or renew the Lease ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The write succeeded: this replica holds the Lease.
    Held,
    /// Another replica holds it, or won the race for it (a conflict on the write).
    NotHeld,
    /// The API server did not answer, or failed, within the time given.
    Failed,
}

/// Why a leader stops leading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Another replica holds the Lease.
    Taken,
    /// No renewal succeeded within the renew deadline: the Lease may expire any moment, so
    /// the leader steps down before another replica can take it.
    RenewDeadline,
}

/// Where a leader stands after an attempt to renew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// Still the leader; the last successful renewal was at `renewed`.
    Holding { renewed: Instant },
    /// No longer the leader: its term must end at once.
    Lost(Loss),
}

/// The lease duration written into the Lease, in whole seconds.
fn seconds(config: &LeaseConfig) -> i32 {
    i32::try_from(config.duration.as_secs()).unwrap_or(i32::MAX)
}

/// Decides, from one read of the Lease (`None`: there is none) and what this replica saw
/// before, whether to create, take, renew or wait. `now` is this replica's clock; `wall`
/// is the time written as acquire and renew time. Returns the decision and what this
/// replica has seen now.
pub fn decide(
    read: Option<&Lease>,
    seen: Option<&HolderSeen>,
    config: &LeaseConfig,
    now: Instant,
    wall: &MicroTime,
) -> (Decision, Option<HolderSeen>) {
    let Some(lease) = read else {
        let created = Lease {
            metadata: ObjectMeta {
                name: Some(config.name.clone()),
                namespace: Some(config.namespace.clone()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(config.identity.clone()),
                lease_duration_seconds: Some(seconds(config)),
                acquire_time: Some(wall.clone()),
                renew_time: Some(wall.clone()),
                lease_transitions: Some(0),
                ..Default::default()
            }),
        };
        return (Decision::Create(created), seen.cloned());
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let holder = spec.holder_identity.clone().unwrap_or_default();
    let holder_seen = match seen {
        Some(seen) if seen.holder == holder && seen.renew_time == spec.renew_time => seen.clone(),
        _ => HolderSeen {
            holder: holder.clone(),
            renew_time: spec.renew_time.clone(),
            since: now,
        },
    };
    // The holder's own lease duration decides when it has expired; ours if it wrote none.
    let duration = spec
        .lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map(Duration::from_secs)
        .unwrap_or(config.duration);
    let mine = holder == config.identity;
    if !mine && !holder.is_empty() && now.saturating_duration_since(holder_seen.since) < duration {
        return (Decision::Wait, Some(holder_seen));
    }
    let transitions = spec.lease_transitions.unwrap_or(0);
    let written = Lease {
        metadata: lease.metadata.clone(),
        spec: Some(LeaseSpec {
            holder_identity: Some(config.identity.clone()),
            lease_duration_seconds: Some(seconds(config)),
            acquire_time: if mine {
                spec.acquire_time.clone()
            } else {
                Some(wall.clone())
            },
            renew_time: Some(wall.clone()),
            lease_transitions: Some(if mine { transitions } else { transitions + 1 }),
            ..spec
        }),
    };
    let decision = if mine {
        Decision::Renew(written)
    } else {
        Decision::Take {
            lease: written,
            previous: holder,
        }
    };
    (decision, Some(holder_seen))
}

/// What this replica has seen once the API server accepted its write of the Lease.
pub fn written(lease: &Lease, now: Instant) -> HolderSeen {
    let spec = lease.spec.clone().unwrap_or_default();
    HolderSeen {
        holder: spec.holder_identity.unwrap_or_default(),
        renew_time: spec.renew_time,
        since: now,
    }
}

/// Past the instant a holder falls silent, so that the next read finds it so (the
/// sharding rounds wait as much past a Lease's silence, for the same reason).
pub const SILENCE_MARGIN: Duration = Duration::from_millis(10);

/// How long a candidate that found the Lease held waits before it tries again: a retry
/// period, or less when the holder it watches falls silent sooner (`seen.since` plus the
/// holder's lease duration), so that a dead holder's Lease is taken when it lapses rather
/// than up to a retry period later.
pub fn acquire_wait(
    seen: Option<&HolderSeen>,
    holder_duration: Duration,
    retry_period: Duration,
    now: Instant,
) -> Duration {
    seen.filter(|seen| !seen.holder.is_empty())
        .map(|seen| (seen.since + holder_duration).saturating_duration_since(now) + SILENCE_MARGIN)
        .map_or(retry_period, |until| until.min(retry_period))
}

/// How long a leader that last renewed at `renewed` may wait for its next renewal: what is
/// left of the renew deadline, but never less than [`MIN_RENEW_BUDGET`].
pub fn renew_budget(renewed: Instant, now: Instant, renew_deadline: Duration) -> Duration {
    renew_deadline
        .saturating_sub(now.saturating_duration_since(renewed))
        .max(MIN_RENEW_BUDGET)
}

/// How long a candidate waits for one attempt to take the Lease.
pub fn acquire_budget(retry_period: Duration) -> Duration {
    retry_period.max(Duration::from_secs(1))
}

/// Where a leader that last renewed at `renewed` stands after `attempt` ended at `now`:
/// another holder ends the term at once, and so does the renew deadline passing without a
/// successful renewal.
pub fn after_renewal(
    attempt: Attempt,
    renewed: Instant,
    now: Instant,
    renew_deadline: Duration,
) -> Renewal {
    // A renewal that lands once the deadline has passed does not revive the term: the
    // Lease may have lapsed meanwhile and another replica taken it; the holder must
    // acquire afresh.
    if now.saturating_duration_since(renewed) >= renew_deadline {
        return Renewal::Lost(Loss::RenewDeadline);
    }
    let renewed = match attempt {
        Attempt::Held => now,
        Attempt::NotHeld => return Renewal::Lost(Loss::Taken),
        Attempt::Failed => renewed,
    };
    if now.saturating_duration_since(renewed) >= renew_deadline {
        Renewal::Lost(Loss::RenewDeadline)
    } else {
        Renewal::Holding { renewed }
    }
}

/// The write that gives the Lease up on stepping down, so another replica takes over at
/// once: no holder, a lease duration of one second, renewed at `wall`. `None` when this
/// replica does not hold the Lease (then it is left alone).
pub fn released(lease: &Lease, identity: &str, wall: &MicroTime) -> Option<Lease> {
    let spec = lease.spec.clone().unwrap_or_default();
    if spec.holder_identity.as_deref() != Some(identity) {
        return None;
    }
    Some(Lease {
        metadata: lease.metadata.clone(),
        spec: Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            renew_time: Some(wall.clone()),
            ..spec
        }),
    })
}
