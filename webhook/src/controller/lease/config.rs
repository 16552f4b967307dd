//! A Lease's settings: where it is, who this replica is in it, and its durations.

use std::time::Duration;

/// The settings of a Lease this replica takes and holds.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    pub duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}
