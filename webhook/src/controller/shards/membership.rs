//! Who the live installer replicas are, from their membership Leases, on this replica's
//! own clock: a member is live while its Lease's holder or renew time changed within its
//! lease duration as observed here (the leader election's rule, so clock skew between
//! replicas does not matter).

use std::{collections::HashMap, time::Duration};

use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use providers::installer::edge_owners::{MemberSeen, live_members, member_of_lease};
use tokio::time::Instant;

/// The membership Leases as last seen, and since when each looked the same.
#[derive(Default)]
pub struct Members {
    seen: HashMap<String, Seen>,
}

/// Edges without a live owner: for each edge, its fencing Lease as last seen and since
/// when it looked the same (the hub leader's view, for the metric and its alert).
#[derive(Default)]
pub struct Owners {
    seen: HashMap<String, (Option<String>, Option<String>, Instant)>,
}

impl Owners {
    /// Takes in the Edges' names and their fencing Leases (by edge); how many edges have
    /// no owner: no Lease, no holder, or one silent for its whole duration here.
    pub fn without_owner(
        &mut self,
        edges: &[String],
        leases: &HashMap<String, Lease>,
        now: Instant,
    ) -> usize {
        let mut next = HashMap::new();
        let mut without = 0;
        for edge in edges {
            let spec = leases
                .get(edge)
                .and_then(|lease| lease.spec.clone())
                .unwrap_or_default();
            let holder = spec.holder_identity;
            let renewed = spec.renew_time.map(|t| t.0.to_string());
            let duration = Duration::from_secs(
                u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0),
            );
            let since = match self.seen.get(edge) {
                Some((h, r, since)) if *h == holder && *r == renewed => *since,
                _ => now,
            };
            if holder.is_none() || now.saturating_duration_since(since) >= duration {
                without += 1;
            }
            next.insert(edge.clone(), (holder, renewed, since));
        }
        self.seen = next;
        without
    }
}

struct Seen {
    identity: String,
    holder: Option<String>,
    renewed: Option<String>,
    duration: Duration,
    since: Instant,
}

impl Members {
    /// Takes in one listing of the Leases beside the leader Lease `base`; the live members,
    /// sorted. A released Lease (no holder) is no member.
    pub fn observe(&mut self, base: &str, leases: &[Lease], now: Instant) -> Vec<String> {
        let mut next = HashMap::new();
        for lease in leases {
            let name = lease.name_any();
            let Some(identity) = member_of_lease(base, &name).map(str::to_owned) else {
                continue;
            };
            let spec = lease.spec.clone().unwrap_or_default();
            let holder = spec.holder_identity;
            let renewed = spec.renew_time.map(|t| t.0.to_string());
            let duration = Duration::from_secs(
                u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0),
            );
            let since = match self.seen.get(&name) {
                Some(before) if before.holder == holder && before.renewed == renewed => {
                    before.since
                }
                _ => now,
            };
            next.insert(
                name,
                Seen {
                    identity,
                    holder,
                    renewed,
                    duration,
                    since,
                },
            );
        }
        self.seen = next;
        let members: Vec<MemberSeen> = self
            .seen
            .values()
            .filter(|seen| seen.holder.is_some())
            .map(|seen| MemberSeen {
                identity: seen.identity.clone(),
                silent_for: now.saturating_duration_since(seen.since),
                lease_duration: seen.duration,
            })
            .collect();
        live_members(&members)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{
        api::coordination::v1::LeaseSpec, apimachinery::pkg::apis::meta::v1::MicroTime,
        jiff::Timestamp,
    };

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
    fn an_edge_without_a_renewed_lease_has_no_owner() {
        let mut owners = Owners::default();
        let start = Instant::now();
        let edges = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let leases: HashMap<String, Lease> = [
            ("a".to_owned(), lease("base-edge-a", Some("x"), 100)),
            ("b".to_owned(), lease("base-edge-b", None, 100)),
        ]
        .into();
        // b has no holder, c no Lease.
        assert_eq!(owners.without_owner(&edges, &leases, start), 2);
        // a not renewed for its whole duration (15 s) on this clock.
        let later = start + Duration::from_secs(15);
        assert_eq!(owners.without_owner(&edges, &leases, later), 3);
        let renewed: HashMap<String, Lease> =
            [("a".to_owned(), lease("base-edge-a", Some("x"), 115))].into();
        assert_eq!(owners.without_owner(&edges, &renewed, later), 2);
    }

    #[test]
    fn a_member_is_live_while_its_lease_changes_on_the_observers_clock() {
        let mut members = Members::default();
        let start = Instant::now();
        let leases = [
            lease("base-member-a", Some("a"), 100),
            lease("base-member-b", Some("b"), 100),
            lease("base-member-c", None, 100),
            lease("base", Some("a"), 100),
            lease("base-edge-e", Some("a"), 100),
        ];
        assert_eq!(members.observe("base", &leases, start), ["a", "b"]);
        // b renews, a does not: 16 s later only b is live, whatever the times say.
        let later = start + Duration::from_secs(16);
        let leases = [
            lease("base-member-a", Some("a"), 100),
            lease("base-member-b", Some("b"), 101),
        ];
        assert_eq!(members.observe("base", &leases, later), ["b"]);
        // a renews again: live again at once.
        let leases = [
            lease("base-member-a", Some("a"), 999),
            lease("base-member-b", Some("b"), 101),
        ];
        assert_eq!(
            members.observe("base", &leases, later + Duration::from_secs(1)),
            ["a", "b"]
        );
    }
}
