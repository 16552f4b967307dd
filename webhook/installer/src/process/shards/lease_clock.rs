//! The installer's Leases as this replica has seen them, on its own clock: for each Lease,
//! its holder, renew time and lease duration as last listed, and since when it looked so.
//! A holder is live while its Lease changed within its lease duration as seen here
//! (the leader election's rule, so clock skew between replicas does not matter). One clock
//! answers every "is it live" of sharding: the members, the edges' holders (to take an
//! expired one at once, and to count edges without an owner) and the leader.

use std::{collections::HashMap, time::Duration};

use k8s_openapi::{api::coordination::v1::Lease, apimachinery::pkg::apis::meta::v1::MicroTime};
use kube::ResourceExt;
use providers_shared::installer::edge_owners::{MemberSeen, live_members, member_of_lease};
use tokio::time::Instant;

use crate::process::lease::HolderSeen;

struct LeaseSeen {
    holder: Option<String>,
    renew_time: Option<MicroTime>,
    duration: Duration,
    since: Instant,
}

#[derive(Default)]
pub struct LeaseClock {
    seen: HashMap<String, LeaseSeen>,
}

impl LeaseClock {
    /// Takes in one listing of the Leases at `now`: a Lease whose holder and renew time
    /// are as before keeps its time; a changed or new one starts at `now`; one no longer
    /// listed is forgotten.
    pub fn see<'a>(&mut self, leases: impl IntoIterator<Item = &'a Lease>, now: Instant) {
        let mut next = HashMap::with_capacity(self.seen.len());
        for lease in leases {
            let name = lease.name_any();
            let spec = lease.spec.clone().unwrap_or_default();
            let since = match self.seen.get(&name) {
                Some(before)
                    if before.holder == spec.holder_identity
                        && before.renew_time == spec.renew_time =>
                {
                    before.since
                }
                _ => now,
            };
            let duration = Duration::from_secs(
                u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0),
            );
            next.insert(
                name,
                LeaseSeen {
                    holder: spec.holder_identity,
                    renew_time: spec.renew_time,
                    duration,
                    since,
                },
            );
        }
        self.seen = next;
    }

    /// The holder of the Lease `name` while it is live at `now`: held, and changed within
    /// its lease duration on this clock. `None` without a Lease, a holder, or once silent.
    pub fn live_holder(&self, name: &str, now: Instant) -> Option<&str> {
        let seen = self.seen.get(name)?;
        let holder = seen.holder.as_deref().filter(|h| !h.is_empty())?;
        (now.saturating_duration_since(seen.since) < seen.duration).then_some(holder)
    }

    /// The next instant after `now` at which a Lease live now falls silent (its holder
    /// not renewed for its duration), if any: the moment to look again.
    pub fn next_silence(&self, now: Instant) -> Option<Instant> {
        self.seen
            .values()
            .filter(|seen| seen.holder.as_deref().is_some_and(|h| !h.is_empty()))
            .map(|seen| seen.since + seen.duration)
            .filter(|at| *at > now)
            .min()
    }

    /// What the leader election needs to take the Lease `name` as soon as it has expired
    /// here, rather than after a further lease duration of watching it.
    pub fn holder_seen(&self, name: &str) -> Option<HolderSeen> {
        self.seen.get(name).map(|seen| HolderSeen {
            holder: seen.holder.clone().unwrap_or_default(),
            renew_time: seen.renew_time.clone(),
            since: seen.since,
        })
    }

    /// Every replica with a membership Lease beside `base`, held or given back, sorted: a
    /// replica keeps its membership Lease object for good once made; an installer of the
    /// removed leader-standby mode never makes one.
    pub fn with_membership(&self, base: &str) -> Vec<String> {
        let mut members: Vec<String> = self
            .seen
            .keys()
            .filter_map(|name| member_of_lease(base, name).map(str::to_owned))
            .collect();
        members.sort();
        members
    }

    /// The live members beside the leader Lease `base`, sorted: the identities of the held
    /// membership Leases (`<base>-member-<identity>`) changed within their duration.
    pub fn live_members(&self, base: &str, now: Instant) -> Vec<String> {
        let members: Vec<MemberSeen> = self
            .seen
            .iter()
            .filter(|(_, seen)| seen.holder.as_deref().is_some_and(|h| !h.is_empty()))
            .filter_map(|(name, seen)| {
                Some(MemberSeen {
                    identity: member_of_lease(base, name)?.to_owned(),
                    silent_for: now.saturating_duration_since(seen.since),
                    lease_duration: seen.duration,
                })
            })
            .collect();
        live_members(&members)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{api::coordination::v1::LeaseSpec, jiff::Timestamp};

    use super::*;

    fn lease(name: &str, holder: Option<&str>, renewed_secs: i64) -> Lease {
        Lease {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime(
                    Timestamp::from_second(renewed_secs).expect("a time"),
                )),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_holder_is_live_while_its_lease_changes_on_the_watching_replicas_clock() {
        let mut clock = LeaseClock::default();
        let start = Instant::now();
        clock.see(
            &[
                lease("base-edge-a", Some("x"), 100),
                lease("base-edge-b", None, 100),
            ],
            start,
        );
        assert_eq!(clock.live_holder("base-edge-a", start), Some("x"));
        // Only a held Lease falls silent: a at start + 15 s.
        assert_eq!(
            clock.next_silence(start),
            Some(start + Duration::from_secs(15))
        );
        // No holder, no Lease.
        assert_eq!(clock.live_holder("base-edge-b", start), None);
        assert_eq!(clock.live_holder("base-edge-c", start), None);
        // Not renewed for its whole duration (15 s) on this clock, whatever its times say.
        let later = start + Duration::from_secs(15);
        clock.see(&[lease("base-edge-a", Some("x"), 100)], later);
        assert_eq!(clock.live_holder("base-edge-a", later), None);
        let seen = clock.holder_seen("base-edge-a").expect("seen");
        assert_eq!((seen.holder.as_str(), seen.since), ("x", start));
        // Renewed: live again at once.
        clock.see(&[lease("base-edge-a", Some("x"), 115)], later);
        assert_eq!(clock.live_holder("base-edge-a", later), Some("x"));
    }

    #[test]
    fn the_members_are_the_live_membership_leases_of_the_base() {
        let mut clock = LeaseClock::default();
        let start = Instant::now();
        clock.see(
            &[
                lease("base-member-a", Some("a"), 100),
                lease("base-member-b", Some("b"), 100),
                lease("base-member-c", None, 100),
                lease("base", Some("a"), 100),
                lease("base-edge-e", Some("a"), 100),
                lease("other-member-d", Some("d"), 100),
            ],
            start,
        );
        assert_eq!(clock.live_members("base", start), ["a", "b"]);
        assert_eq!(clock.with_membership("base"), ["a", "b", "c"]);
        // b renews, a does not: 16 s later only b is live.
        let later = start + Duration::from_secs(16);
        clock.see(
            &[
                lease("base-member-a", Some("a"), 100),
                lease("base-member-b", Some("b"), 101),
            ],
            later,
        );
        assert_eq!(clock.live_members("base", later), ["b"]);
        clock.see(
            &[
                lease("base-member-a", Some("a"), 999),
                lease("base-member-b", Some("b"), 101),
            ],
            later + Duration::from_secs(1),
        );
        assert_eq!(
            clock.live_members("base", later + Duration::from_secs(1)),
            ["a", "b"]
        );
    }
}
