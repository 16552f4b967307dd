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
    /// The API server's own account of its webhook calls over the whole run (warm-up and
    /// probes included): webhook name and operation, calls, mean duration.
    pub apiserver_view: Vec<(String, u64, Duration)>,
    /// The webhook's own account over the same run (from reading the body to the answer,
    /// TLS and HTTP excluded): endpoint, calls, mean duration.
    pub webhook_view: Vec<(String, u64, Duration)>,
}

/// Sums and counts of the webhook's request duration histogram, by endpoint.
async fn webhook_durations(target: &Target) -> anyhow::Result<Vec<(String, f64, u64)>> {
    let text = target.get("/metrics").await?;
    let mut out = Vec::new();
    for endpoint in ["mutate", "validate"] {
        let value = |kind: &str| -> anyhow::Result<f64> {
            let prefix = format!(
                "providers_webhook_admission_request_duration_seconds_{kind}{{endpoint=\"{endpoint}\"}} "
            );
            Ok(text
                .lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .map(str::parse::<f64>)
                .transpose()?
                .unwrap_or(0.0))
        };
        out.push((endpoint.to_owned(), value("sum")?, value("count")? as u64));
    }
    Ok(out)
}

/// Sums and counts of the API server's `apiserver_admission_webhook_admission_duration_seconds`
/// by webhook name and operation.
async fn apiserver_webhook_durations(
    fixture: &Fixture,
) -> anyhow::Result<Vec<(String, u64, Duration)>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = fixture.admin.request_text(request).await?;
    let mut totals: std::collections::BTreeMap<String, (f64, u64)> = Default::default();
    let prefix = "apiserver_admission_webhook_admission_duration_seconds_";
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(prefix) else {
            continue;
        };
        let Some((kind, rest)) = rest.split_once('{') else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"').to_owned())
                .unwrap_or_default()
        };
        let key = format!("{} {}", label("name"), label("operation"));
        let entry = totals.entry(key).or_default();
        match kind {
            "sum" => entry.0 += value.parse::<f64>()?,
            "count" => entry.1 += value.parse::<u64>()?,
            _ => {}
        }
    }
    Ok(totals
        .into_iter()
        .filter(|(_, (_, count))| *count > 0)
        .map(|(key, (sum, count))| (key, count, Duration::from_secs_f64(sum / count as f64)))
        .collect())
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
    let webhook_before = webhook_durations(target).await?;
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
    let apiserver_view = apiserver_webhook_durations(fixture).await?;
    let webhook_view = webhook_durations(target)
        .await?
        .into_iter()
        .zip(webhook_before)
        .filter(|((_, _, after), (_, _, before))| after > before)
        .map(|((endpoint, sum, count), (_, sum0, count0))| {
            let calls = count - count0;
            (
                endpoint,
                calls,
                Duration::from_secs_f64((sum - sum0) / calls as f64),
            )
        })
        .collect();
    // Leave the webhooks registered, as found.
    fixture.webhook.register(&fixture.plane.info).await?;
    Ok(Report {
        retry_with: Latencies::new(retry_with),
        retry_without: Latencies::new(retry_without),
        label_with: Latencies::new(label_with),
        label_without: Latencies::new(label_without),
        mutate_calls: webhook_calls.mutate,
        validate_calls: webhook_calls.validate,
        apiserver_view,
        webhook_view,
    })
}
