//! Which installer replica owns which edge: rendezvous (highest random weight) hashing over
//! the live members, so that a member joining or leaving moves only its own share of the
//! edges (about 1/N of them), and every replica computes the same answer from the same
//! membership without talking to the others.
//!
//! Membership and ownership are Kubernetes Leases (the shell reads and writes them); this
//! module only decides. A member is live while its membership Lease was renewed within its
//! lease duration, measured on the watching replica's own clock (as the leader election does, so
//! clock skew between replicas does not matter). Owning an edge by the hash is not leave to
//! write to it: a replica writes only while it holds the edge's fencing Lease, and
//! [`edge_step`] says when to take and when to give one back.

use std::time::Duration;

use sha2::{Digest, Sha256};

/// A member's weight for an edge: the first 8 bytes of SHA-256 over both names. Stable
/// across replicas, versions and platforms (no process-seeded hasher).
fn weight(member: &str, edge: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(member.as_bytes());
    // A separator no Kubernetes name holds, so ("ab", "c") and ("a", "bc") differ.
    hasher.update([0u8]);
    hasher.update(edge.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The member that owns `edge`: the one of highest weight (ties, which SHA-256 makes
/// practically impossible, go to the smaller name). `None` without members.
pub fn owner_of<'a>(edge: &str, members: &'a [String]) -> Option<&'a str> {
    members
        .iter()
        .map(|member| (weight(member, edge), member.as_str()))
        .max_by(|(a, name_a), (b, name_b)| a.cmp(b).then_with(|| name_b.cmp(name_a)))
        .map(|(_, member)| member)
}

/// The edges of `edges` that `member` owns among `members`.
pub fn owned_by<'a>(member: &str, edges: &'a [String], members: &[String]) -> Vec<&'a str> {
    edges
        .iter()
        .filter(|edge| owner_of(edge, members) == Some(member))
        .map(String::as_str)
        .collect()
}

/// The longest Kubernetes object name (a DNS subdomain).
const MAX_NAME: usize = 253;

/// `<base>-<role>-<name>`, or, when that is longer than an object name may be, its first
/// part and a digest of the whole (distinct names stay distinct).
fn lease_name(base: &str, role: &str, name: &str) -> String {
    let full = format!("{base}-{role}-{name}");
    if full.len() <= MAX_NAME {
        return full;
    }
    let digest = hex::encode(&Sha256::digest(full.as_bytes())[..8]);
    let keep = MAX_NAME - digest.len() - 1;
    let mut cut = full[..keep].to_owned();
    while cut.ends_with(['-', '.']) {
        cut.pop();
    }
    format!("{cut}-{digest}")
}

/// The membership Lease of replica `identity`, beside the leader Lease `base`.
pub fn member_lease(base: &str, identity: &str) -> String {
    lease_name(base, MEMBER, &dns_safe(identity))
}

/// The fencing Lease of `edge`, beside the leader Lease `base`.
pub fn edge_lease(base: &str, edge: &str) -> String {
    lease_name(base, "edge", edge)
}

/// The role word of membership Leases: `<base>-member-<identity>`.
pub const MEMBER: &str = "member";

/// The identity of a membership Lease of `base`, from its name: `None` for other Leases.
pub fn member_of_lease<'a>(base: &str, lease: &'a str) -> Option<&'a str> {
    lease
        .strip_prefix(base)?
        .strip_prefix('-')?
        .strip_prefix(MEMBER)?
        .strip_prefix('-')
        .filter(|identity| !identity.is_empty())
}

/// An identity as an object name part: lower case, other characters as `-`.
fn dns_safe(identity: &str) -> String {
    identity
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '.' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect()
}

/// One membership Lease as a replica saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberSeen {
    pub identity: String,
    /// How long ago, on the watching replica's clock, the Lease's holder or renew time last changed.
    pub silent_for: Duration,
    /// The lease duration its holder wrote.
    pub lease_duration: Duration,
}

/// The live members, sorted: those whose Lease changed within its lease duration.
pub fn live_members(seen: &[MemberSeen]) -> Vec<String> {
    let mut live: Vec<String> = seen
        .iter()
        .filter(|member| member.silent_for < member.lease_duration)
        .map(|member| member.identity.clone())
        .collect();
    live.sort();
    live.dedup();
    live
}

/// What a replica does about one edge's fencing Lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeStep {
    /// The edge is this replica's by the hash and it holds the Lease: renew and work.
    Keep,
    /// The edge is this replica's by the hash: take its Lease (free, released, or expired),
    /// then start its work (caches synced before any write).
    Acquire,
    /// The edge is another's by the hash and this replica holds its Lease: stop its work,
    /// then release the Lease so the new owner takes it at once.
    Release,
    /// Another's edge, not held: nothing to do.
    Leave,
}

/// The step for `edge` of replica `me`, holding its Lease or not, given the live members.
/// While this replica does not know the membership (`members` empty: its own Lease not
/// yet seen, or the watch not listed) it keeps what it holds and takes nothing: an empty
/// view must not make every replica drop every edge at once.
pub fn edge_step(edge: &str, me: &str, members: &[String], held: bool) -> EdgeStep {
    if members.is_empty() {
        return if held {
            EdgeStep::Keep
        } else {
            EdgeStep::Leave
        };
    }
    match (owner_of(edge, members) == Some(me), held) {
        (true, true) => EdgeStep::Keep,
        (true, false) => EdgeStep::Acquire,
        (false, true) => EdgeStep::Release,
        (false, false) => EdgeStep::Leave,
    }
}

/// Whether `leader`, the live holder of the leader Lease `base`, has no membership Lease
/// (`members`: every identity with one, held or given back): an installer of a version
/// that still ran one leader working every edge without their fencing Leases (ADR 44). A
/// replica that sees one takes no edge and gives back those it holds until it is gone, so
/// an upgrade that skips scaling the old installer to 0 stalls instead of having two
/// writers of one edge. A replica of this version keeps its membership Lease object for
/// good once made, so its leader Lease lapsing is never taken for such a leader.
pub fn leader_outside_membership(base: &str, leader: &str, members: &[String]) -> bool {
    let lease = member_lease(base, leader);
    member_of_lease(base, &lease).is_none_or(|name| !members.iter().any(|m| m == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leader_without_a_membership_lease_is_outside_the_membership() {
        let members = vec!["pod-1".to_owned(), "pod-2".to_owned()];
        assert!(!leader_outside_membership("base", "pod-1", &members));
        // The identity as its membership Lease names it.
        assert!(!leader_outside_membership("base", "Pod_1", &members));
        assert!(leader_outside_membership("base", "pod-3", &members));
        assert!(leader_outside_membership("base", "pod-1", &[]));
    }

    #[test]
    fn lease_names_are_object_names_and_stay_distinct() {
        assert_eq!(
            member_lease("providers-installer", "Pod_1"),
            "providers-installer-member-pod-1"
        );
        assert_eq!(
            member_of_lease("providers-installer", "providers-installer-member-pod-1"),
            Some("pod-1")
        );
        assert_eq!(
            member_of_lease("providers-installer", "providers-installer-edge-a"),
            None
        );
        assert_eq!(
            member_of_lease("providers-installer", "providers-installer"),
            None
        );
        assert_eq!(
            edge_lease("providers-installer", "edge-1"),
            "providers-installer-edge-edge-1"
        );
        let long_a = edge_lease("providers-installer", &format!("{}a", "e".repeat(250)));
        let long_b = edge_lease("providers-installer", &format!("{}b", "e".repeat(250)));
        assert!(long_a.len() <= 253 && long_b.len() <= 253);
        assert_ne!(long_a, long_b);
    }

    fn names(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}-{i}")).collect()
    }

    #[test]
    fn the_owner_is_the_same_whatever_the_order_of_the_members() {
        let members = names("installer", 5);
        let mut reversed = members.clone();
        reversed.reverse();
        for edge in names("edge", 100) {
            assert_eq!(owner_of(&edge, &members), owner_of(&edge, &reversed));
        }
        assert_eq!(owner_of("edge-1", &[]), None);
    }

    #[test]
    fn edges_spread_evenly_over_the_members() {
        let members = names("installer", 3);
        let edges = names("edge", 3_000);
        for member in &members {
            let share = owned_by(member, &edges, &members).len();
            assert!(
                (850..=1_150).contains(&share),
                "{member} owns {share} of 3,000 edges"
            );
        }
    }

    #[test]
    fn a_member_joining_takes_only_its_share_and_moves_nothing_else() {
        let before = names("installer", 3);
        let mut after = before.clone();
        after.push("installer-new".to_owned());
        let edges = names("edge", 2_000);
        let mut moved = 0;
        for edge in &edges {
            let (old, new) = (owner_of(edge, &before), owner_of(edge, &after));
            if old != new {
                assert_eq!(
                    new,
                    Some("installer-new"),
                    "{edge} moved between old members"
                );
                moved += 1;
            }
        }
        // About a quarter of the edges go to the fourth member.
        assert!((400..=600).contains(&moved), "{moved} of 2,000 edges moved");
    }

    #[test]
    fn a_member_leaving_moves_only_its_own_edges() {
        let before = names("installer", 4);
        let after: Vec<String> = before
            .iter()
            .filter(|m| *m != "installer-2")
            .cloned()
            .collect();
        for edge in names("edge", 2_000) {
            let (old, new) = (owner_of(&edge, &before), owner_of(&edge, &after));
            if old != Some("installer-2") {
                assert_eq!(old, new, "{edge} moved though its owner stayed");
            } else {
                assert_ne!(new, Some("installer-2"));
            }
        }
    }

    #[test]
    fn only_members_renewed_within_their_lease_duration_are_live() {
        let seen = |identity: &str, silent: u64| MemberSeen {
            identity: identity.to_owned(),
            silent_for: Duration::from_secs(silent),
            lease_duration: Duration::from_secs(15),
        };
        let live = live_members(&[seen("b", 3), seen("a", 14), seen("c", 15), seen("b", 1)]);
        assert_eq!(live, ["a", "b"]);
    }

    #[test]
    fn a_replica_takes_its_own_edges_gives_back_anothers_and_drops_nothing_blind() {
        let members = names("installer", 3);
        let edge = "edge-7";
        let owner = owner_of(edge, &members).unwrap().to_owned();
        let other = members.iter().find(|m| **m != owner).unwrap();
        assert_eq!(edge_step(edge, &owner, &members, false), EdgeStep::Acquire);
        assert_eq!(edge_step(edge, &owner, &members, true), EdgeStep::Keep);
        assert_eq!(edge_step(edge, other, &members, true), EdgeStep::Release);
        assert_eq!(edge_step(edge, other, &members, false), EdgeStep::Leave);
        // No membership known yet: keep what is held, take nothing.
        assert_eq!(edge_step(edge, other, &[], true), EdgeStep::Keep);
        assert_eq!(edge_step(edge, &owner, &[], false), EdgeStep::Leave);
    }
}
