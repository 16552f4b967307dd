//! What `/readyz` means for the installer: a standby replica is ready (it waits for the
//! lease, which is its job); the leader is ready once its Workspace cache is synced, the
//! Edge list is in and every Edge has been probed (and, if Ready, its watches started).

use std::sync::atomic::{AtomicBool, Ordering};

use super::edges::Edges;
use crate::runtime::{Synced, admin::Readiness};

pub struct ControllerReadiness {
    leading: AtomicBool,
    /// The term's Workspace watch has its first list.
    workspaces: Synced,
    edges: Edges,
}

impl ControllerReadiness {
    pub fn new(edges: Edges) -> Self {
        Self {
            leading: AtomicBool::new(false),
            workspaces: Synced::default(),
            edges,
        }
    }

    /// A term starts (`true`) or ends (`false`): its caches start empty.
    pub fn set_leading(&self, leading: bool) {
        self.workspaces.clear();
        self.leading.store(leading, Ordering::Release);
    }

    /// Whether the term's Workspace cache has its first list: set by the term's watch,
    /// waited for by the PlanValues sweep.
    pub fn workspaces(&self) -> &Synced {
        &self.workspaces
    }
}

impl Readiness for ControllerReadiness {
    fn check(&self) -> Result<String, String> {
        if !self.leading.load(Ordering::Acquire) {
            return Ok("standby, waiting for the lease".into());
        }
        if !self.workspaces.is_set() {
            return Err("leading; the Workspace cache is still syncing".into());
        }
        let probed = self
            .edges
            .probed()
            .map_err(|waiting| format!("leading; {waiting}"))?;
        Ok(format!(
            "leading, Workspace cache synced, {probed} edge(s) probed"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standby_is_ready_and_a_leader_once_its_caches_are_in() {
        let edges = Edges::default();
        let readiness = ControllerReadiness::new(edges.clone());
        assert!(readiness.check().unwrap().starts_with("standby"));
        readiness.set_leading(true);
        assert!(
            readiness
                .check()
                .unwrap_err()
                .contains("Workspace cache is still syncing")
        );
        readiness.workspaces().set();
        assert!(
            readiness
                .check()
                .unwrap_err()
                .contains("the Edge list is not in yet")
        );
        edges.expect("edge-1");
        edges.set_synced();
        assert!(
            readiness
                .check()
                .unwrap_err()
                .contains("1 edge(s) not probed yet")
        );
        edges.record_unreachable_for_test("edge-1");
        assert_eq!(
            readiness.check(),
            Ok("leading, Workspace cache synced, 1 edge(s) probed".into())
        );
        readiness.set_leading(false);
        readiness.set_leading(true);
        assert!(readiness.check().is_err(), "a new term syncs again");
    }
}
