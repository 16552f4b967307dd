//! Slots for TLS handshakes in progress: a bound for the whole server and a smaller one per
//! peer address. Before its handshake a caller is unauthenticated, so this is all a stranger
//! who reaches the port can hold; the per-peer bound keeps one such caller from taking every
//! slot from the API server.
//!
//! A stranger with a few addresses could still hold every slot (idle connections, made
//! again as each handshake times out), and then the API server's next connection is closed
//! and every write it sends the webhook fails. So a quarter of the slots are kept for
//! peers that completed a handshake lately (the API server's addresses: with client
//! certificates required, completing one is proving who it is). A webhook that has never
//! been called since it started has no such peer yet: the network policy
//! (`manifests/components/network-policy`) is what keeps strangers off the port then.

use providers_runtime::locks::Locked;
use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// How long a peer that completed a handshake may take the kept slots.
const KNOWN_FOR: Duration = Duration::from_secs(15 * 60);
/// The most peers remembered as having completed a handshake.
const MAX_KNOWN: usize = 64;

/// Handshakes in progress, in total and by peer address.
#[derive(Debug)]
pub(super) struct HandshakeSlots {
    total: usize,
    per_peer: usize,
    /// Slots only a peer that completed a handshake lately may take.
    kept: usize,
    // Only peers with a handshake in progress have an entry, so it holds at most `total`.
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    in_progress: usize,
    by_peer: HashMap<IpAddr, usize>,
    /// Peers that completed a handshake, and when they last did.
    known: HashMap<IpAddr, Instant>,
}

/// One handshake's slot, given back when dropped.
#[derive(Debug)]
pub(super) struct HandshakeSlot {
    slots: Arc<HandshakeSlots>,
    peer: IpAddr,
}

impl HandshakeSlots {
    /// `total` slots, at most `per_peer` for one address, of which `kept` only for peers
    /// that completed a handshake lately.
    pub fn new(total: usize, per_peer: usize, kept: usize) -> Arc<Self> {
        let total = total.max(1);
        Arc::new(Self {
            total,
            per_peer: per_peer.max(1),
            kept: kept.min(total - 1),
            state: Mutex::new(State::default()),
        })
    }

    /// A slot for `peer`, or `None` when the server or that peer has no slot left (for a
    /// peer that has not completed a handshake lately, the kept slots are not there).
    pub fn try_acquire(self: &Arc<Self>, peer: IpAddr) -> Option<HandshakeSlot> {
        let mut state = self.state.locked();
        let of_peer = state.by_peer.get(&peer).copied().unwrap_or(0);
        let known = state
            .known
            .get(&peer)
            .is_some_and(|at| at.elapsed() < KNOWN_FOR);
        let open = if known {
            self.total
        } else {
            self.total - self.kept
        };
        if state.in_progress >= open || of_peer >= self.per_peer {
            return None;
        }
        state.in_progress += 1;
        state.by_peer.insert(peer, of_peer + 1);
        Some(HandshakeSlot {
            slots: self.clone(),
            peer,
        })
    }
}

impl HandshakeSlot {
    /// The handshake completed: its peer may take the kept slots for a while.
    pub fn completed(self) {
        let mut state = self.slots.state.locked();
        let now = Instant::now();
        state
            .known
            .retain(|_, at| now.duration_since(*at) < KNOWN_FOR);
        if state.known.len() >= MAX_KNOWN
            && !state.known.contains_key(&self.peer)
            && let Some(oldest) = state
                .known
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(peer, _)| *peer)
        {
            state.known.remove(&oldest);
        }
        state.known.insert(self.peer, now);
    }
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        let mut state = self.slots.state.locked();
        state.in_progress = state.in_progress.saturating_sub(1);
        if let Some(count) = state.by_peer.get_mut(&self.peer) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                state.by_peer.remove(&self.peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn one_peer_cannot_take_every_slot() {
        let slots = HandshakeSlots::new(4, 2, 0);
        let a1 = slots.try_acquire(ip(1)).unwrap();
        let _a2 = slots.try_acquire(ip(1)).unwrap();
        assert!(slots.try_acquire(ip(1)).is_none(), "peer bound");
        let _b1 = slots.try_acquire(ip(2)).unwrap();
        let _b2 = slots.try_acquire(ip(2)).unwrap();
        assert!(slots.try_acquire(ip(3)).is_none(), "total bound");
        drop(a1);
        assert!(
            slots.try_acquire(ip(3)).is_some(),
            "a slot given back is free"
        );
    }

    #[test]
    fn strangers_cannot_take_the_slots_kept_for_a_peer_that_completed_a_handshake() {
        let slots = HandshakeSlots::new(8, 2, 2);
        // The API server completed a handshake once.
        slots.try_acquire(ip(1)).unwrap().completed();
        // Strangers from three addresses take every slot open to them: six of eight.
        let mut stalled = Vec::new();
        for peer in 2..=4 {
            stalled.push(slots.try_acquire(ip(peer)).unwrap());
            stalled.push(slots.try_acquire(ip(peer)).unwrap());
        }
        assert!(
            slots.try_acquire(ip(5)).is_none(),
            "a fourth stranger waits"
        );
        // The API server still gets its handshakes.
        let api_server = slots.try_acquire(ip(1)).expect("a kept slot");
        let _second = slots.try_acquire(ip(1)).expect("another kept slot");
        drop(api_server);
        drop(stalled);
        assert!(
            slots.try_acquire(ip(5)).is_some(),
            "slots given back are free"
        );
    }

    #[test]
    fn peers_are_forgotten_when_their_handshakes_end() {
        let slots = HandshakeSlots::new(8, 8, 0);
        for last in 0..=255 {
            drop(slots.try_acquire(ip(last)).unwrap());
        }
        let state = slots.state.locked();
        assert_eq!(state.in_progress, 0);
        assert!(state.by_peer.is_empty());
    }
}
