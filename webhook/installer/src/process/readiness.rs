//! What `/readyz` means for the installer: ready once the replica runs, its Workspace cache
//! is synced, the Edge list is in and every Edge it holds has been probed (and, if Ready,
//! its watches started). Before its run starts and after it stops, not ready; nor while
//! an installer of the removed leader-standby mode leads (ADR 44).

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use crate::{edge::Edges, support::ownership::Shards};
use providers_runtime::admin::Readiness;
use providers_runtime::synced::Synced;

pub struct ControllerReadiness {
    running: AtomicBool,
    /// The replica's Workspace watch has its first list.
    workspaces: Synced,
    edges: Edges,
    shards: Arc<Shards>,
}

impl ControllerReadiness {
    pub fn new(edges: Edges, shards: Arc<Shards>) -> Self {
        Self {
            running: AtomicBool::new(false),
            workspaces: Synced::default(),
            edges,
            shards,
        }
    }

    /// The replica's run starts (`true`) or ends (`false`): its caches start empty.
    pub fn set_running(&self, running: bool) {
        self.workspaces.clear();
        self.running.store(running, Ordering::Release);
    }

    /// Whether the replica's Workspace cache has its first list: set by its watch,
    /// waited for by the PlanValues sweep.
    pub fn workspaces(&self) -> &Synced {
        &self.workspaces
    }
}

impl Readiness for ControllerReadiness {
    fn check(&self) -> Result<String, String> {
        if !self.running.load(Ordering::Acquire) {
            return Err("the replica is not running (starting or stopping)".into());
        }
        if let Some(leader) = self.shards.old_mode_leader() {
            // Not ready, so that a rolling update from that mode stalls with the old
            // installer still working, instead of two writers of one edge.
            return Err(format!(
                "running, working no edge: {leader}, an installer of the leader-standby mode, leads and works every edge; scale it to 0 (docs/operations.md, \"Upgrading from the leader-standby mode\")"
            ));
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
    fn ready_once_the_replica_runs_with_its_caches_in() {
        let edges = Edges::default();
        let shards = Arc::new(Shards::new(crate::support::ownership::ShardConfig {
            leader: crate::support::config::LeaseConfig {
                namespace: "providers-system".into(),
                name: "providers-installer".into(),
                identity: "pod-1".into(),
                duration: std::time::Duration::from_secs(15),
                renew_deadline: std::time::Duration::from_secs(10),
                retry_period: std::time::Duration::from_secs(2),
            },
        }));
        let readiness = ControllerReadiness::new(edges.clone(), shards.clone());
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
        shards.set_old_mode_leader(Some("old-pod".into()));
        let standing_down = readiness.check().unwrap_err();
        assert!(
            standing_down.contains("old-pod") && standing_down.contains("scale it to 0"),
            "{standing_down}"
        );
        shards.set_old_mode_leader(None);
        assert!(readiness.check().is_ok());
        readiness.set_running(false);
        assert!(readiness.check().is_err(), "a stopped run is not ready");
        readiness.set_running(true);
        assert!(readiness.check().is_err(), "a new run syncs again");
    }
}
