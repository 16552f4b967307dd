//! Through the API server: the latency of the same Workspace update with the webhooks
//! registered and without them, in alternating blocks, each update checked against the
//! webhook's own request counters (so every measured update did, or did not, reach both
//! webhooks).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;
use testbed::webhook::Webhook;

use crate::{fixture::Fixture, loadgen::Target, stats::Latencies};

const WORKSPACE: &str = "latency";
/// Bounds the waits for the API server to pick up (un)registration.
const PROPAGATION_TRIES: usize = 100;

pub struct Settings {
    /// Measured updates of each kind per block.
    pub updates: usize,
    /// Unmeasured updates at the start of each block.
    pub warmup: usize,
    /// Blocks with the webhooks, each followed by one without.
    pub rounds: usize,
}

/// Latencies of each update kind, with and without the webhooks.
pub struct Report {
    /// Raising spec.retry after a successful attempt: both webhooks review it, both admit it.
    pub retry_with: Latencies,
    pub retry_without: Latencies,
    /// Changing a label: the matchConditions keep it from the webhooks.
    pub label_with: Latencies,
    pub label_without: Latencies,
    /// Calls the measured retry updates made to each webhook (at least one per update).
    pub mutate_calls: u64,
    pub validate_calls: u64,
}

/// The webhook's request counts by endpoint, from its /metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counts {
    mutate: u64,
    validate: u64,
}

async fn counts(target: &Target) -> anyhow::Result<Counts> {
    let text = target.get("/metrics").await?;
    let mut counts = Counts {
        mutate: 0,
        validate: 0,
    };
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("providers_webhook_admission_requests_total{") else {
            continue;
        };
        let value: u64 = rest
            .rsplit_once(' ')
            .context("metric line")?
            .1
            .parse()
            .with_context(|| format!("metric value in {line:?}"))?;
        if rest.contains(r#"endpoint="mutate""#) {
            counts.mutate += value;
        } else if rest.contains(r#"endpoint="validate""#) {
            counts.validate += value;
        }
    }
    Ok(counts)
}

struct Run<'a> {
    fixture: &'a Fixture,
    target: &'a Target,
    next_retry: i64,
    next_label: u64,
}

impl Run<'_> {
    async fn bump_retry(&mut self) -> anyhow::Result<Duration> {
        let patch = json!({"spec": {"retry": self.next_retry}});
        self.next_retry += 1;
        let started = Instant::now();
        self.fixture.patch(WORKSPACE, &patch).await?;
        Ok(started.elapsed())
    }

    async fn relabel(&mut self) -> anyhow::Result<Duration> {
        let patch = json!({"metadata": {"labels": {"bench": self.next_label.to_string()}}});
        self.next_label += 1;
        let started = Instant::now();
        self.fixture.patch(WORKSPACE, &patch).await?;
        Ok(started.elapsed())
    }

    /// Updates until one reaches both webhooks (`registered`) or neither.
    async fn wait_for_registration(&mut self, registered: bool) -> anyhow::Result<()> {
        for _ in 0..PROPAGATION_TRIES {
            let before = counts(self.target).await?;
            self.bump_retry().await?;
            let after = counts(self.target).await?;
            let reached = (
                after.mutate > before.mutate,
                after.validate > before.validate,
            );
            if reached == (registered, registered) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!(
            "the API server did not pick up the webhook configurations (registered: {registered})"
        )
    }

    /// One block: warm-up, then measured retry bumps and label changes, checked against the
    /// webhook's counters.
    async fn block(
        &mut self,
        registered: bool,
        settings: &Settings,
        retry: &mut Vec<Duration>,
        label: &mut Vec<Duration>,
    ) -> anyhow::Result<Counts> {
        for _ in 0..settings.warmup {
            self.bump_retry().await?;
            self.relabel().await?;
        }
        let before = counts(self.target).await?;
        for _ in 0..settings.updates {
            retry.push(self.bump_retry().await?);
        }
        let middle = counts(self.target).await?;
        for _ in 0..settings.updates {
            label.push(self.relabel().await?);
        }
        let after = counts(self.target).await?;
        let n = settings.updates as u64;
        let calls = Counts {
            mutate: middle.mutate - before.mutate,
            validate: middle.validate - before.validate,
        };
        // The API server runs admission again when its update loses a race with its own
        // watch cache (a conflict it retries internally), so an update may call a webhook
        // twice; never less than once.
        let reached = if registered {
            calls.mutate >= n && calls.validate >= n
        } else {
            calls.mutate == 0 && calls.validate == 0
        };
        if !reached {
            bail!(
                "{n} retry updates reached the webhooks {calls:?} times (registered: {registered})"
            );
        }
        if after != middle {
            bail!("label updates reached the webhooks: {middle:?} -> {after:?}");
        }
        Ok(calls)
    }
}

pub async fn measure(
    fixture: &Fixture,
    target: &Target,
    settings: &Settings,
) -> anyhow::Result<Report> {
    fixture.create(WORKSPACE).await?;
    fixture.finish(WORKSPACE, "Succeeded").await?;
    let mut run = Run {
        fixture,
        target,
        next_retry: 1,
        next_label: 0,
    };
    let (mut retry_with, mut retry_without, mut label_with, mut label_without) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut webhook_calls = Counts {
        mutate: 0,
        validate: 0,
    };
    for round in 0..settings.rounds {
        if round > 0 {
            fixture.webhook.register(&fixture.plane.info).await?;
        }
        run.wait_for_registration(true).await?;
        let calls = run
            .block(true, settings, &mut retry_with, &mut label_with)
            .await
            .context("with the webhooks")?;
        webhook_calls.mutate += calls.mutate;
        webhook_calls.validate += calls.validate;
        Webhook::unregister(&fixture.plane.info)?;
        run.wait_for_registration(false).await?;
        run.block(false, settings, &mut retry_without, &mut label_without)
            .await
            .context("without the webhooks")?;
    }
    // Leave the webhooks registered, as found.
    fixture.webhook.register(&fixture.plane.info).await?;
    Ok(Report {
        retry_with: Latencies::new(retry_with),
        retry_without: Latencies::new(retry_without),
        label_with: Latencies::new(label_with),
        label_without: Latencies::new(label_without),
        mutate_calls: webhook_calls.mutate,
        validate_calls: webhook_calls.validate,
    })
}
