//! The fleet's gauges (Workspaces by edge and phase, drifted, cleanup outstanding, attempts
//! without a result, live plans by sealing key), kept from the Workspace watch itself.
//!
//! Each watch event moves one Workspace's contribution: the store's copy (what was counted
//! before) is taken out and the event's object put in, so an event costs O(1) (O(log n) for
//! the oldest attempt), a scrape reads the gauges as they are, and nothing is kept per
//! Workspace beyond the watch cache. A relist builds a new tally and replaces the old one
//! at its end, as the store does. Labels are edge names, phases and key IDs: bounded sets,
//! never a Workspace's name.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
};

use kube::runtime::{reflector::Store, watcher};
use providers_shared::{
    admission::attempt::is_active,
    api::{Phase, Workspace},
};

use super::{EdgeLabels, Metrics, PhaseLabels, PlanLabels};
use providers_runtime::locks::Locked;

/// Which plan of a Workspace a key sealed.
const CURRENT: &str = "current";
const KEPT: &str = "kept";

/// What one Workspace adds to the gauges.
#[derive(Debug, PartialEq)]
struct Summary {
    edge: String,
    phase: &'static str,
    drifted: bool,
    /// Its installed release has objects of kinds not followed for drift.
    unfollowed: bool,
    cleanup: bool,
    /// When its attempt without a result was sealed (Unix seconds, 0 if unknown).
    active_since: Option<i64>,
    /// The key IDs of its current plan and its kept plans.
    plans: Vec<(String, &'static str)>,
}

fn phase_name(workspace: &Workspace) -> &'static str {
    match workspace.status.as_ref().and_then(|s| s.phase) {
        None => "Unobserved",
        Some(Phase::Pending) => "Pending",
        Some(Phase::Progressing) => "Progressing",
        Some(Phase::Succeeded) => "Succeeded",
        Some(Phase::Failed) => "Failed",
        Some(Phase::Deleting) => "Deleting",
    }
}

fn summary(workspace: &Workspace) -> Summary {
    let status = workspace.status.as_ref();
    let deleting = workspace.metadata.deletion_timestamp.is_some();
    let sealed = workspace.spec.plan.as_ref().filter(|p| !p.plan.dry_run);
    let active_since = match sealed {
        Some(sealed) if !deleting && is_active(workspace) => Some(
            sealed
                .plan
                .sealed_at
                .as_ref()
                .map_or(0, |t| t.0.as_second()),
        ),
        _ => None,
    };
    let mut plans: Vec<(String, &'static str)> = sealed
        .map(|s| (s.seal.key_id.clone(), CURRENT))
        .into_iter()
        .collect();
    if let Some(status) = status {
        plans.extend(
            status
                .attempts
                .iter()
                .filter_map(|a| a.kept.as_ref())
                .map(|k| (k.plan.seal.key_id.clone(), KEPT)),
        );
    }
    Summary {
        edge: workspace.spec.edge.clone(),
        phase: phase_name(workspace),
        drifted: status.is_some_and(|s| s.drift.is_some()),
        unfollowed: status.is_some_and(|s| !s.unfollowed.is_empty()),
        cleanup: deleting || status.is_some_and(|s| s.job_result.is_some() && !s.cleaned_up),
        active_since,
        plans,
    }
}

/// Counts by label set; the gauges are set from them.
#[derive(Debug, Default)]
struct Tally {
    workspaces: HashMap<(String, &'static str), i64>,
    drifted: HashMap<String, i64>,
    unfollowed: HashMap<String, i64>,
    cleanup: HashMap<String, i64>,
    /// Per edge, the seal times of attempts without a result, with their multiplicity.
    active: HashMap<String, BTreeMap<i64, i64>>,
    plans: HashMap<(String, &'static str), i64>,
}

fn bump<K: std::hash::Hash + Eq>(map: &mut HashMap<K, i64>, key: K, by: i64) {
    *map.entry(key).or_default() += by;
}

impl Tally {
    /// Adds (`by` = 1) or takes out (`by` = -1) one Workspace.
    fn adjust(&mut self, s: &Summary, by: i64) {
        bump(&mut self.workspaces, (s.edge.clone(), s.phase), by);
        if s.drifted {
            bump(&mut self.drifted, s.edge.clone(), by);
        }
        if s.unfollowed {
            bump(&mut self.unfollowed, s.edge.clone(), by);
        }
        if s.cleanup {
            bump(&mut self.cleanup, s.edge.clone(), by);
        }
        if let Some(since) = s.active_since {
            let times = self.active.entry(s.edge.clone()).or_default();
            let n = times.entry(since).or_default();
            *n += by;
            if *n <= 0 {
                times.remove(&since);
            }
        }
        for (key_id, plan) in &s.plans {
            bump(&mut self.plans, (key_id.clone(), *plan), by);
        }
    }

    /// Sets the gauges a Workspace's summary touches.
    fn set_gauges(&self, metrics: &Metrics, s: &Summary) {
        let edge = EdgeLabels {
            edge: s.edge.clone(),
        };
        metrics
            .workspaces
            .get_or_create(&PhaseLabels {
                edge: s.edge.clone(),
                phase: s.phase.to_owned(),
            })
            .set(
                self.workspaces
                    .get(&(s.edge.clone(), s.phase))
                    .copied()
                    .unwrap_or(0),
            );
        metrics
            .workspaces_drifted
            .get_or_create(&edge)
            .set(self.drifted.get(&s.edge).copied().unwrap_or(0));
        metrics
            .workspaces_unfollowed
            .get_or_create(&edge)
            .set(self.unfollowed.get(&s.edge).copied().unwrap_or(0));
        metrics
            .cleanup_backlog
            .get_or_create(&edge)
            .set(self.cleanup.get(&s.edge).copied().unwrap_or(0));
        self.publish_active(metrics, &s.edge);
        for (key_id, plan) in &s.plans {
            metrics
                .plans
                .get_or_create(&PlanLabels {
                    key_id: key_id.clone(),
                    plan: (*plan).to_owned(),
                })
                .set(
                    self.plans
                        .get(&(key_id.clone(), *plan))
                        .copied()
                        .unwrap_or(0),
                );
        }
    }

    fn publish_active(&self, metrics: &Metrics, edge: &str) {
        let labels = EdgeLabels {
            edge: edge.to_owned(),
        };
        let times = self.active.get(edge);
        let count: i64 = times.map_or(0, |t| t.values().sum());
        metrics.active_attempts.get_or_create(&labels).set(count);
        match times.and_then(|t| t.keys().next()) {
            Some(oldest) => {
                metrics
                    .oldest_active_attempt_sealed
                    .get_or_create(&labels)
                    .set(*oldest);
            }
            None => {
                metrics.oldest_active_attempt_sealed.remove(&labels);
            }
        }
    }

    /// Sets every gauge from scratch (after a relist).
    fn publish_all(&self, metrics: &Metrics) {
        metrics.workspaces.clear();
        metrics.workspaces_drifted.clear();
        metrics.workspaces_unfollowed.clear();
        metrics.cleanup_backlog.clear();
        metrics.active_attempts.clear();
        metrics.oldest_active_attempt_sealed.clear();
        metrics.plans.clear();
        for ((edge, phase), n) in &self.workspaces {
            metrics
                .workspaces
                .get_or_create(&PhaseLabels {
                    edge: edge.clone(),
                    phase: (*phase).to_owned(),
                })
                .set(*n);
            // Every edge with Workspaces has its other gauges too, zero or not.
            let labels = EdgeLabels { edge: edge.clone() };
            metrics
                .workspaces_drifted
                .get_or_create(&labels)
                .set(self.drifted.get(edge).copied().unwrap_or(0));
            metrics
                .workspaces_unfollowed
                .get_or_create(&labels)
                .set(self.unfollowed.get(edge).copied().unwrap_or(0));
            metrics
                .cleanup_backlog
                .get_or_create(&labels)
                .set(self.cleanup.get(edge).copied().unwrap_or(0));
            self.publish_active(metrics, edge);
        }
        for ((key_id, plan), n) in &self.plans {
            metrics
                .plans
                .get_or_create(&PlanLabels {
                    key_id: key_id.clone(),
                    plan: (*plan).to_owned(),
                })
                .set(*n);
        }
    }
}

/// The tally of the Workspaces the watch has delivered, fed each event before the
/// reflector stores it.
pub struct Fleet {
    metrics: Arc<Metrics>,
    state: Mutex<Tallies>,
}

#[derive(Default)]
struct Tallies {
    live: Tally,
    /// The tally of a relist in progress.
    relisting: Option<Tally>,
}

impl Fleet {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            metrics,
            state: Mutex::new(Tallies::default()),
        }
    }

    /// Counts one watch event; `store` still holds what the event replaces.
    pub fn on_event(&self, store: &Store<Workspace>, event: &watcher::Event<Workspace>) {
        let mut state = self.state.locked();
        match event {
            watcher::Event::Init => state.relisting = Some(Tally::default()),
            watcher::Event::InitApply(workspace) => {
                if let Some(tally) = state.relisting.as_mut() {
                    tally.adjust(&summary(workspace), 1);
                }
            }
            watcher::Event::InitDone => {
                if let Some(tally) = state.relisting.take() {
                    state.live = tally;
                    state.live.publish_all(&self.metrics);
                }
            }
            watcher::Event::Apply(workspace) => {
                let old = store.get(&kube::runtime::reflector::ObjectRef::from_obj(workspace));
                let new = summary(workspace);
                if let Some(old) = old.as_deref().map(summary) {
                    if old == new {
                        return;
                    }
                    state.live.adjust(&old, -1);
                    state.live.set_gauges(&self.metrics, &old);
                }
                state.live.adjust(&new, 1);
                state.live.set_gauges(&self.metrics, &new);
            }
            watcher::Event::Delete(workspace) => {
                let old = store.get(&kube::runtime::reflector::ObjectRef::from_obj(workspace));
                if let Some(old) = old.as_deref().map(summary) {
                    state.live.adjust(&old, -1);
                    state.live.set_gauges(&self.metrics, &old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
