//! The leader election's decisions, without an API server: acquire, renew, lose, step down.

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use tokio::time::Instant;

use super::{
    LeaseConfig,
    decide::{
        Attempt, Decision, HolderSeen, Loss, Renewal, acquire_budget, acquire_wait, after_renewal,
        decide, released, renew_budget, written,
    },
};

const ME: &str = "installer-a";
const OTHER: &str = "installer-b";

fn config() -> LeaseConfig {
    LeaseConfig {
        namespace: "providers-system".into(),
        name: "providers-installer".into(),
        identity: ME.into(),
        duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
    }
}

/// A wall-clock time, `second` seconds after the epoch.
fn wall(second: i64) -> MicroTime {
    MicroTime(Timestamp::from_second(second).unwrap())
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// The Lease as read: resourceVersion 7, acquired at 900, renewed at `renewed`, three
/// transitions so far.
fn lease(holder: Option<&str>, renewed: i64, duration: Option<i32>) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some("providers-installer".into()),
            namespace: Some("providers-system".into()),
            resource_version: Some("7".into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: holder.map(Into::into),
            lease_duration_seconds: duration,
            acquire_time: Some(wall(900)),
            renew_time: Some(wall(renewed)),
            lease_transitions: Some(3),
            ..Default::default()
        }),
    }
}

fn spec(lease: &Lease) -> &LeaseSpec {
    lease.spec.as_ref().unwrap()
}

/// The write a decision to take the Lease makes, and from whom it takes it.
fn taken(decision: Decision) -> (Lease, String) {
    match decision {
        Decision::Take { lease, previous } => (lease, previous),
        other => panic!("expected to take the Lease, got {other:?}"),
    }
}

// Acquire.

#[test]
fn a_missing_lease_is_created_held_by_us() {
    let now = Instant::now();
    let (decision, seen) = decide(None, None, &config(), now, &wall(1000));
    let created = match decision {
        Decision::Create(lease) => lease,
        other => panic!("expected to create the Lease, got {other:?}"),
    };
    assert_eq!(
        created.metadata.name.as_deref(),
        Some("providers-installer")
    );
    assert_eq!(
        created.metadata.namespace.as_deref(),
        Some("providers-system")
    );
    assert_eq!(created.metadata.resource_version, None);
    assert_eq!(
        created.spec,
        Some(LeaseSpec {
            holder_identity: Some(ME.into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(wall(1000)),
            renew_time: Some(wall(1000)),
            lease_transitions: Some(0),
            ..Default::default()
        })
    );
    assert_eq!(seen, None, "nothing was read, so nothing is seen");
}

#[test]
fn a_free_lease_is_taken_at_once() {
    // Released by its last holder: no holder, a lease duration of one second.
    let free = lease(None, 990, Some(1));
    let now = Instant::now();
    let (decision, seen) = decide(Some(&free), None, &config(), now, &wall(1000));
    let (write, previous) = taken(decision);
    assert_eq!(previous, "");
    assert_eq!(write.metadata.resource_version.as_deref(), Some("7"));
    let spec = spec(&write);
    assert_eq!(spec.holder_identity.as_deref(), Some(ME));
    assert_eq!(spec.lease_duration_seconds, Some(15));
    assert_eq!(spec.acquire_time, Some(wall(1000)));
    assert_eq!(spec.renew_time, Some(wall(1000)));
    assert_eq!(spec.lease_transitions, Some(4));
    assert_eq!(
        seen,
        Some(HolderSeen {
            holder: String::new(),
            renew_time: Some(wall(990)),
            since: now,
        })
    );
    // An empty holder is no holder.
    let (decision, _) = decide(
        Some(&lease(Some(""), 990, Some(15))),
        None,
        &config(),
        now,
        &wall(1000),
    );
    assert_eq!(taken(decision).1, "");
}

#[test]
fn an_expired_lease_of_another_holder_is_taken() {
    let held = lease(Some(OTHER), 1000, Some(15));
    let t0 = Instant::now();
    let (decision, seen) = decide(Some(&held), None, &config(), t0, &wall(1000));
    assert_eq!(
        decision,
        Decision::Wait,
        "a holder first seen has a whole lease duration"
    );
    let (decision, seen) = decide(
        Some(&held),
        seen.as_ref(),
        &config(),
        t0 + secs(14),
        &wall(1014),
    );
    assert_eq!(decision, Decision::Wait);
    assert_eq!(
        seen.as_ref().unwrap().since,
        t0,
        "an unchanged Lease keeps its first sight"
    );
    let (decision, _) = decide(
        Some(&held),
        seen.as_ref(),
        &config(),
        t0 + secs(15),
        &wall(1015),
    );
    let (write, previous) = taken(decision);
    assert_eq!(previous, OTHER);
    assert_eq!(write.metadata.resource_version.as_deref(), Some("7"));
    let spec = spec(&write);
    assert_eq!(spec.holder_identity.as_deref(), Some(ME));
    assert_eq!(spec.acquire_time, Some(wall(1015)));
    assert_eq!(spec.renew_time, Some(wall(1015)));
    assert_eq!(spec.lease_duration_seconds, Some(15));
    assert_eq!(spec.lease_transitions, Some(4));
}

#[test]
fn a_renewal_by_the_holder_restarts_the_wait() {
    let t0 = Instant::now();
    let (_, seen) = decide(
        Some(&lease(Some(OTHER), 1000, Some(15))),
        None,
        &config(),
        t0,
        &wall(1000),
    );
    let renewed = lease(Some(OTHER), 1010, Some(15));
    let (decision, seen) = decide(
        Some(&renewed),
        seen.as_ref(),
        &config(),
        t0 + secs(10),
        &wall(1010),
    );
    assert_eq!(decision, Decision::Wait);
    assert_eq!(seen.as_ref().unwrap().since, t0 + secs(10));
    let (decision, seen) = decide(
        Some(&renewed),
        seen.as_ref(),
        &config(),
        t0 + secs(24),
        &wall(1024),
    );
    assert_eq!(decision, Decision::Wait, "14 s since the renewal was seen");
    let (decision, _) = decide(
        Some(&renewed),
        seen.as_ref(),
        &config(),
        t0 + secs(25),
        &wall(1025),
    );
    assert_eq!(taken(decision).1, OTHER);
}

#[test]
fn a_holders_silence_is_measured_on_our_clock_not_its_renew_time() {
    // Renewed, by the holder's clock, a day before ours: first seen now, it is not expired.
    let skewed = lease(Some(OTHER), 1000 - 86_400, Some(15));
    let (decision, _) = decide(Some(&skewed), None, &config(), Instant::now(), &wall(1000));
    assert_eq!(decision, Decision::Wait);
}

#[test]
fn the_holders_lease_duration_decides_when_it_expires() {
    let t0 = Instant::now();
    let long = lease(Some(OTHER), 1000, Some(40));
    let (_, seen) = decide(Some(&long), None, &config(), t0, &wall(1000));
    let (decision, seen) = decide(
        Some(&long),
        seen.as_ref(),
        &config(),
        t0 + secs(39),
        &wall(1039),
    );
    assert_eq!(
        decision,
        Decision::Wait,
        "our 15 s do not apply to its Lease"
    );
    let (decision, _) = decide(
        Some(&long),
        seen.as_ref(),
        &config(),
        t0 + secs(40),
        &wall(1040),
    );
    assert_eq!(taken(decision).1, OTHER);
    // Without a usable duration on the Lease, ours applies.
    for duration in [None, Some(-5)] {
        let odd = lease(Some(OTHER), 1000, duration);
        let (_, seen) = decide(Some(&odd), None, &config(), t0, &wall(1000));
        let (decision, seen) = decide(
            Some(&odd),
            seen.as_ref(),
            &config(),
            t0 + secs(14),
            &wall(1014),
        );
        assert_eq!(decision, Decision::Wait);
        let (decision, _) = decide(
            Some(&odd),
            seen.as_ref(),
            &config(),
            t0 + secs(15),
            &wall(1015),
        );
        assert_eq!(taken(decision).1, OTHER);
    }
}

#[test]
fn a_candidate_waits_at_least_a_second_for_an_attempt() {
    assert_eq!(acquire_budget(secs(2)), secs(2));
    assert_eq!(acquire_budget(Duration::from_millis(200)), secs(1));
}

// Renew.

#[test]
fn our_lease_is_renewed_before_the_deadline() {
    let ours = lease(Some(ME), 1000, Some(30));
    let t0 = Instant::now();
    // At once, even when first seen (a restarted replica keeps its identity and its Lease).
    let (decision, _) = decide(Some(&ours), None, &config(), t0, &wall(1002));
    let write = match decision {
        Decision::Renew(lease) => lease,
        other => panic!("expected to renew the Lease, got {other:?}"),
    };
    assert_eq!(write.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(
        write.spec,
        Some(LeaseSpec {
            holder_identity: Some(ME.into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(wall(900)),
            renew_time: Some(wall(1002)),
            lease_transitions: Some(3),
            ..Default::default()
        }),
        "a renewal keeps the acquire time and the transitions"
    );
    // A successful renewal before the deadline keeps the term, from the renewal on.
    assert_eq!(
        after_renewal(Attempt::Held, t0, t0 + secs(2), secs(10)),
        Renewal::Holding {
            renewed: t0 + secs(2)
        }
    );
}

#[test]
fn what_was_written_is_what_is_seen() {
    let now = Instant::now();
    let ours = lease(Some(ME), 1002, Some(15));
    assert_eq!(
        written(&ours, now),
        HolderSeen {
            holder: ME.into(),
            renew_time: Some(wall(1002)),
            since: now,
        }
    );
}

#[test]
fn a_renewal_is_given_what_is_left_of_the_deadline() {
    let t0 = Instant::now();
    assert_eq!(renew_budget(t0, t0 + secs(2), secs(10)), secs(8));
    assert_eq!(
        renew_budget(t0, t0 + Duration::from_millis(9_950), secs(10)),
        Duration::from_millis(100)
    );
    assert_eq!(
        renew_budget(t0, t0 + secs(30), secs(10)),
        Duration::from_millis(100)
    );
}

#[test]
fn a_failed_renewal_before_the_deadline_keeps_the_term() {
    let t0 = Instant::now();
    assert_eq!(
        after_renewal(
            Attempt::Failed,
            t0,
            t0 + Duration::from_millis(9_999),
            secs(10)
        ),
        Renewal::Holding { renewed: t0 }
    );
}

// Lose.

#[test]
fn another_holder_ends_the_term_at_once() {
    // Another replica renewed the Lease: read while leading, it is not ours to renew.
    let t0 = Instant::now();
    let (decision, _) = decide(
        Some(&lease(Some(OTHER), 1000, Some(15))),
        None,
        &config(),
        t0,
        &wall(1000),
    );
    assert_eq!(decision, Decision::Wait);
    // Which the elector reports as not held (as it does a conflict on the write): lost,
    // however long before the deadline.
    assert_eq!(
        after_renewal(Attempt::NotHeld, t0, t0 + secs(2), secs(10)),
        Renewal::Lost(Loss::Taken)
    );
}

#[test]
fn failed_renewals_past_the_renew_deadline_end_the_term() {
    let t0 = Instant::now();
    assert_eq!(
        after_renewal(Attempt::Failed, t0, t0 + secs(10), secs(10)),
        Renewal::Lost(Loss::RenewDeadline)
    );
    assert_eq!(
        after_renewal(Attempt::Failed, t0, t0 + secs(12), secs(10)),
        Renewal::Lost(Loss::RenewDeadline)
    );
}

// Step down.

#[test]
fn stepping_down_releases_our_lease() {
    let ours = lease(Some(ME), 1000, Some(15));
    let write = released(&ours, ME, &wall(1005)).expect("ours to release");
    assert_eq!(
        write.metadata, ours.metadata,
        "conditional on the resourceVersion read"
    );
    assert_eq!(
        write.spec,
        Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(wall(900)),
            renew_time: Some(wall(1005)),
            lease_transitions: Some(3),
            ..Default::default()
        })
    );
    // Which the next candidate takes at once.
    let (decision, _) = decide(
        Some(&write),
        None,
        &LeaseConfig {
            identity: OTHER.into(),
            ..config()
        },
        Instant::now(),
        &wall(1006),
    );
    assert_eq!(taken(decision).1, "");
}

#[test]
fn stepping_down_leaves_a_lease_we_do_not_hold_alone() {
    assert_eq!(
        released(&lease(Some(OTHER), 1000, Some(15)), ME, &wall(1005)),
        None
    );
    assert_eq!(released(&lease(None, 1000, Some(1)), ME, &wall(1005)), None);
    let no_spec = Lease {
        spec: None,
        ..lease(None, 1000, None)
    };
    assert_eq!(released(&no_spec, ME, &wall(1005)), None);
}

#[test]
fn a_candidate_looks_again_when_the_holder_falls_silent_or_after_a_retry_period() {
    let now = Instant::now();
    let seen = |holder: &str, ago: u64| HolderSeen {
        holder: holder.into(),
        renew_time: Some(wall(100)),
        since: now - secs(ago),
    };
    // Silent for 14 of its 15 s: look again in 1 s (and a little), not 2.
    let wait = acquire_wait(Some(&seen("other", 14)), secs(15), secs(2), now);
    assert!(
        wait > secs(1) && wait < Duration::from_millis(1100),
        "{wait:?}"
    );
    // Renewed just now: a retry period.
    assert_eq!(
        acquire_wait(Some(&seen("other", 0)), secs(15), secs(2), now),
        secs(2)
    );
    // Nothing watched yet, or no holder: a retry period.
    assert_eq!(acquire_wait(None, secs(15), secs(2), now), secs(2));
    assert_eq!(
        acquire_wait(Some(&seen("", 14)), secs(15), secs(2), now),
        secs(2)
    );
}
