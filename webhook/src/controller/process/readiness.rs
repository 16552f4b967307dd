//! What `/readyz` means for the installer: ready once the term runs, its Workspace cache
//! is synced, the Edge list is in and every Edge it holds has been probed (and, if Ready,
//! its watches started). Before the term starts and after it stops, not ready.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::controller::edge::Edges;
use crate::runtime::{Synced, admin::Readiness};

pub struct ControllerReadiness {
    running: AtomicBool,
    /// The term's Workspace watch has its first list.
    workspaces: Synced,
    edges: Edges,
}

impl ControllerReadiness {
    pub fn new(edges: Edges) -> Self {
        Self {
            running: AtomicBool::new(false),
            workspaces: Synced::default(),
            edges,
        }
    }

    /// A term starts (`true`) or ends (`false`): its caches start empty.
    pub fn set_running(&self, running: bool) {
        self.workspaces.clear();
        self.running.store(running, Ordering::Release);
    }

    /// Whether the term's Workspace cache has its first list: set by the term's watch,
    /// waited for by the PlanValues sweep.
    pub fn workspaces(&self) -> &Synced {
        &self.workspaces
    }
}

impl Readiness for ControllerReadiness {
    fn check(&self) -> Result<String, String> {
        if !self.running.load(Ordering::Acquire) {
            return Err("the term is not running (starting or stopping)".into());
        }
        if !self.workspaces.is_set() {
            return Err("running; the Workspace cache is still syncing".into());
        }
        let probed = self
            .edges
            .probed()
            .map_err(|waiting| format!("running; {waiting}"))?;
        Ok(format!(
            "running, Workspace cache synced, {probed} edge(s) probed"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_once_the_term_runs_with_its_caches_in() {
        let edges = Edges::default();
        let readiness = ControllerReadiness::new(edges.clone());
        assert!(readiness.check().unwrap_err().contains("not running"));
        readiness.set_running(true);
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
            Ok("running, Workspace cache synced, 1 edge(s) probed".into())
        );
        readiness.set_running(false);
        assert!(readiness.check().is_err(), "a stopped term is not ready");
        readiness.set_running(true);
        assert!(readiness.check().is_err(), "a new term syncs again");
    }
}
