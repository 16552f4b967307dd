//! Leader election with a coordination.k8s.io/v1 Lease, the way client-go does it.
//!
//! A candidate takes the Lease when it is free, or when its holder has not renewed it for
//! a whole lease duration *as observed locally* (the time since this replica last saw the
//! holder or renew time change), so clock skew between replicas does not matter. Every
//! write carries the resourceVersion read, so two candidates never both win. A leader that
//! cannot renew within the renew deadline steps down before its Lease can expire.

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{Api, Client, api::PostParams};
use tokio::time::{Instant, sleep, timeout};

#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    pub duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

pub struct Elector {
    api: Api<Lease>,
    config: LeaseConfig,
    /// The holder and renew time last seen, and when they were first seen.
    observed: Option<(String, Option<MicroTime>, Instant)>,
}

impl Elector {
    pub fn new(client: Client, config: LeaseConfig) -> Self {
        Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
        }
    }

    /// Returns once this replica holds the Lease.
    pub async fn acquire(&mut self) {
        loop {
            match timeout(
                self.config.retry_period.max(Duration::from_secs(1)),
                self.try_hold(),
            )
            .await
            {
                Ok(Ok(true)) => return,
                Ok(Ok(false)) => {}
                Ok(Err(error)) => tracing::warn!(%error, "cannot read or write the Lease"),
                Err(_) => tracing::warn!("the Lease request timed out"),
            }
            sleep(self.config.retry_period).await;
        }
    }

    /// Renews the Lease until it cannot within the renew deadline, or another replica
    /// holds it; then returns.
    pub async fn hold(&mut self) {
        let mut renewed = Instant::now();
        loop {
            sleep(self.config.retry_period).await;
            let left = self
                .config
                .renew_deadline
                .saturating_sub(renewed.elapsed())
                .max(Duration::from_millis(100));
            match timeout(left, self.try_hold()).await {
                Ok(Ok(true)) => renewed = Instant::now(),
                Ok(Ok(false)) => {
                    tracing::warn!("another replica holds the Lease");
                    return;
                }
                Ok(Err(error)) => tracing::warn!(%error, "cannot renew the Lease"),
                Err(_) => tracing::warn!("renewing the Lease timed out"),
            }
            if renewed.elapsed() >= self.config.renew_deadline {
                tracing::warn!(
                    deadline = ?self.config.renew_deadline,
                    "could not renew the Lease within the renew deadline"
                );
                return;
            }
        }
    }

    /// Gives the Lease up so another replica takes over at once.
    pub async fn release(&mut self) {
        let Ok(Some(lease)) = self.api.get_opt(&self.config.name).await else {
            return;
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return;
        }
        let released = Lease {
            metadata: lease.metadata.clone(),
            spec: Some(LeaseSpec {
                holder_identity: None,
                lease_duration_seconds: Some(1),
                renew_time: Some(MicroTime(Timestamp::now())),
                ..spec
            }),
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
        let me = self.config.identity.clone();
        let seconds = i32::try_from(self.config.duration.as_secs()).unwrap_or(i32::MAX);
        let now = MicroTime(Timestamp::now());
        let Some(lease) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(me),
                    lease_duration_seconds: Some(seconds),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(false),
                Err(error) => Err(error),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let seen = (holder.clone(), spec.renew_time.clone());
        let since = match &self.observed {
            Some((h, r, at)) if (h, r) == (&seen.0, &seen.1) => *at,
            _ => {
                let at = Instant::now();
                self.observed = Some((seen.0, seen.1, at));
                at
            }
        };
        let duration = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map(Duration::from_secs)
            .unwrap_or(self.config.duration);
        let mine = holder == me;
        if !mine && !holder.is_empty() && since.elapsed() < duration {
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0);
        let renewed = Lease {
            metadata: lease.metadata.clone(),
            spec: Some(LeaseSpec {
                holder_identity: Some(me),
                lease_duration_seconds: Some(seconds),
                acquire_time: if mine {
                    spec.acquire_time.clone()
                } else {
                    Some(now.clone())
                },
                renew_time: Some(now),
                lease_transitions: Some(if mine { transitions } else { transitions + 1 }),
                ..spec
            }),
        };
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &renewed)
            .await
        {
            Ok(lease) => {
                let spec = lease.spec.unwrap_or_default();
                self.observed = Some((
                    spec.holder_identity.unwrap_or_default(),
                    spec.renew_time,
                    Instant::now(),
                ));
                if !mine {
                    tracing::info!(previous = %holder, "took the Lease");
                }
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.is_conflict() => Ok(false),
            Err(error) => Err(error),
        }
    }
}
