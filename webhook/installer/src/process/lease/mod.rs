//! Leader election with a coordination.k8s.io/v1 Lease, the way client-go does it.
//!
//! A candidate takes the Lease when it is free, or when its holder has not renewed it for
//! a whole lease duration *as seen locally* (the time since this replica last saw the
//! holder or renew time change), so clock skew between replicas does not matter. Every
//! write carries the resourceVersion read, so two candidates never both win. A leader that
//! cannot renew within the renew deadline steps down before its Lease can expire.
//!
//! Every decision is a pure function in [`decide`] (docs/adr/0030-leader-election.md); the
//! [`Elector`] only reads and writes the Lease and waits.

mod decide;
#[cfg(test)]
mod tests;

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::Lease, apimachinery::pkg::apis::meta::v1::MicroTime, jiff::Timestamp,
};
use kube::{Api, Client, api::PostParams};
use tokio::time::{Instant, sleep, timeout};

use self::decide::{Attempt, Decision, Loss, Renewal};
pub use self::decide::{HolderSeen, SILENCE_MARGIN};
pub use crate::support::config::LeaseConfig;

pub struct Elector {
    api: Api<Lease>,
    config: LeaseConfig,
    /// The holder and renew time last seen, and when they were first seen.
    holder_seen: Option<HolderSeen>,
    /// The lease duration the holder last read wrote.
    holder_duration: Option<Duration>,
    /// When this replica last took or renewed the Lease: a term's renew deadline counts
    /// from it, however often `hold` is called.
    renewed: Option<Instant>,
}

impl Elector {
    pub fn new(client: Client, config: LeaseConfig) -> Self {
        Self::with_holder_seen(client, config, None)
    }

    /// An elector that has already watched the Lease: `holder_seen` says since when (on this
    /// replica's clock) it has looked as it does, so an expired Lease is taken at once
    /// rather than after a further lease duration of watching it.
    pub fn with_holder_seen(
        client: Client,
        config: LeaseConfig,
        holder_seen: Option<HolderSeen>,
    ) -> Self {
        Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            holder_seen,
            holder_duration: None,
            renewed: None,
        }
    }

    /// Returns once this replica holds the Lease.
    pub async fn acquire(&mut self) {
        loop {
            match timeout(
                decide::acquire_budget(self.config.retry_period),
                self.try_hold(),
            )
            .await
            {
                Ok(Ok(true)) => {
                    self.renewed = Some(Instant::now());
                    return;
                }
                Ok(Ok(false)) => {
                    sleep(decide::acquire_wait(
                        self.holder_seen.as_ref(),
                        self.holder_duration.unwrap_or(self.config.duration),
                        self.config.retry_period,
                        Instant::now(),
                    ))
                    .await;
                    continue;
                }
                Ok(Err(error)) => tracing::warn!(%error, "cannot read or write the Lease"),
                Err(_) => tracing::warn!("the Lease request timed out"),
            }
            sleep(self.config.retry_period).await;
        }
    }

    /// Renews the Lease until it cannot within the renew deadline, or another replica
    /// holds it; then returns.
    pub async fn hold(&mut self) {
        self.hold_reporting(|_| {}).await;
    }

    /// [`Self::hold`], telling `on_renewed` the local time of every renewal (the fencing
    /// of an edge counts its renew deadline from it).
    pub async fn hold_reporting(&mut self, mut on_renewed: impl FnMut(Instant)) {
        let mut renewed = self.renewed.unwrap_or_else(Instant::now);
        loop {
            sleep(self.config.retry_period).await;
            let budget = decide::renew_budget(renewed, Instant::now(), self.config.renew_deadline);
            let attempt = match timeout(budget, self.try_hold()).await {
                Ok(Ok(true)) => Attempt::Held,
                Ok(Ok(false)) => Attempt::NotHeld,
                Ok(Err(error)) => {
                    tracing::warn!(%error, "cannot renew the Lease");
                    Attempt::Failed
                }
                Err(_) => {
                    tracing::warn!("renewing the Lease timed out");
                    Attempt::Failed
                }
            };
            match decide::after_renewal(
                attempt,
                renewed,
                Instant::now(),
                self.config.renew_deadline,
            ) {
                Renewal::Holding { renewed: at } => {
                    renewed = at;
                    self.renewed = Some(at);
                    on_renewed(at);
                }
                Renewal::Lost(Loss::Taken) => {
                    self.renewed = None;
                    tracing::warn!("another replica holds the Lease");
                    return;
                }
                Renewal::Lost(Loss::RenewDeadline) => {
                    self.renewed = None;
                    tracing::warn!(
                        deadline = ?self.config.renew_deadline,
                        "could not renew the Lease within the renew deadline"
                    );
                    return;
                }
            }
        }
    }

    /// Gives the Lease up so another replica takes over at once.
    pub async fn release(&mut self) {
        let Ok(Some(lease)) = self.api.get_opt(&self.config.name).await else {
            return;
        };
        let wall = MicroTime(Timestamp::now());
        let Some(released) = decide::released(&lease, &self.config.identity, &wall) else {
            return;
        };
        if let Err(error) = self
            .api
            .replace(&self.config.name, &PostParams::default(), &released)
            .await
        {
            tracing::warn!(%error, "could not release the Lease");
        }
    }

    /// One attempt to take or renew the Lease; whether this replica holds it now.
    async fn try_hold(&mut self) -> Result<bool, kube::Error> {
        let wall = MicroTime(Timestamp::now());
        let read = self.api.get_opt(&self.config.name).await?;
        self.holder_duration = read
            .as_ref()
            .and_then(|lease| lease.spec.as_ref()?.lease_duration_seconds)
            .and_then(|seconds| u64::try_from(seconds).ok())
            .map(Duration::from_secs);
        let (decision, holder_seen) = decide::decide(
            read.as_ref(),
            self.holder_seen.as_ref(),
            &self.config,
            Instant::now(),
            &wall,
        );
        self.holder_seen = holder_seen;
        let (lease, previous) = match decision {
            Decision::Wait => return Ok(false),
            Decision::Create(lease) => {
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(false),
                    Err(error) => Err(error),
                };
            }
            Decision::Take { lease, previous } => (lease, Some(previous)),
            Decision::Renew(lease) => (lease, None),
        };
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(lease) => {
                self.holder_seen = Some(decide::written(&lease, Instant::now()));
                if let Some(previous) = previous {
                    tracing::info!(%previous, "took the Lease");
                }
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.is_conflict() => Ok(false),
            Err(error) => Err(error),
        }
    }
}
