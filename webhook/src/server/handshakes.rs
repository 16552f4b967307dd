//! Slots for TLS handshakes in progress: a bound for the whole server and a smaller one per
//! peer address. Before its handshake a caller is unauthenticated, so this is all a stranger
//! who reaches the port can hold; the per-peer bound keeps one such caller from taking every
//! slot from the API server.

use crate::locks::Locked;
use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
};

/// Handshakes in progress, in total and by peer address.
#[derive(Debug)]
pub(super) struct HandshakeSlots {
    total: usize,
    per_peer: usize,
    // Only peers with a handshake in progress have an entry, so it holds at most `total`.
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    in_progress: usize,
    by_peer: HashMap<IpAddr, usize>,
}

/// One handshake's slot, given back when dropped.
#[derive(Debug)]
pub(super) struct HandshakeSlot {
    slots: Arc<HandshakeSlots>,
    peer: IpAddr,
}

impl HandshakeSlots {
    pub fn new(total: usize, per_peer: usize) -> Arc<Self> {
        Arc::new(Self {
            total: total.max(1),
            per_peer: per_peer.max(1),
            state: Mutex::new(State::default()),
        })
    }

    /// A slot for `peer`, or `None` when the server or that peer has no slot left.
    pub fn try_acquire(self: &Arc<Self>, peer: IpAddr) -> Option<HandshakeSlot> {
        let mut state = self.state.locked();
        let of_peer = state.by_peer.get(&peer).copied().unwrap_or(0);
        if state.in_progress >= self.total || of_peer >= self.per_peer {
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
        let slots = HandshakeSlots::new(4, 2);
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
    fn peers_are_forgotten_when_their_handshakes_end() {
        let slots = HandshakeSlots::new(8, 8);
        for last in 0..=255 {
            drop(slots.try_acquire(ip(last)).unwrap());
        }
        let state = slots.state.locked();
        assert_eq!(state.in_progress, 0);
        assert!(state.by_peer.is_empty());
    }
}
