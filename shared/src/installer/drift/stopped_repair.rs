//! Whether automatic repair of a drift has stopped, and the Stalled reason that says so.

use crate::api::AutomaticRepairState;

/// The Stalled reason once automatic repair has stopped.
pub const REPAIR_LOOP: &str = "RepairLoop";

pub(super) fn state_of(drift: &crate::api::Drift) -> Option<AutomaticRepairState> {
    drift.automatic_repair.as_ref().map(|r| r.state)
}

/// Whether automatic repair of this drift has stopped: the Stalled condition says so.
pub fn repair_stopped(drift: &crate::api::Drift) -> bool {
    state_of(drift) == Some(AutomaticRepairState::Stopped)
}
