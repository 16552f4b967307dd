//! Through the API server: the latency of the same Workspace update with the webhooks
//! registered, without them, and with a floor webhook that admits everything unread
//! (`floor.rs`), in alternating blocks, each update checked against the request counters
//! of whichever server should have reviewed it.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use providers_tests::webhook::Webhook;
use serde_json::json;

use crate::{
    fixture::Fixture,
    floor::{Alpn, Floor},
    loadgen::Target,
    stats::Latencies,
};

const WORKSPACE: &str = "latency";
/// Bounds the waits for the API server to pick up (un)registration.
const PROPAGATION_TRIES: usize = 100;

pub struct Settings {
    /// Measured updates of each kind per block.
    pub updates: usize,
    /// Unmeasured updates at the start of each block.
    pub warmup: usize,
    /// Rounds of blocks: the webhooks, none, then each floor.
    pub rounds: usize,
}

/// Who reviews a block's updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reviewer {
    /// The real webhook, both configurations.
    Webhook,
    /// No webhook configuration at all (CEL rules only).
    Nothing,
    /// The floor webhook offering these ALPN protocols, under the same configurations.
    Floor(Alpn),
}

impl Reviewer {
    pub fn describe(self) -> &'static str {
        match self {
            Reviewer::Webhook => "the webhooks",
            Reviewer::Nothing => "none",
            Reviewer::Floor(Alpn::Http2) => "floor (h2)",
            Reviewer::Floor(Alpn::Http1) => "floor (HTTP/1.1)",
        }
    }
}

/// One reviewer's blocks, all rounds together.
pub struct Measured {
    pub reviewer: Reviewer,
    /// Raising spec.retry after a successful attempt: both configurations match it.
    pub retry: Latencies,
    /// Changing a label: the matchConditions keep it from any webhook.
    pub label: Latencies,
    /// Webhook calls by the measured retry updates (at least two per update).
    pub calls: u64,
    /// The API server's own account of those calls, by webhook name and operation: calls and
    /// mean duration (`apiserver_admission_webhook_admission_duration_seconds`).
    pub apiserver_view: Vec<(String, u64, Duration)>,
}

pub struct Report {
    pub measured: Vec<Measured>,
    /// The real webhook's own account of its calls over the whole run (from reading the
    /// body to the answer, TLS and HTTP excluded): endpoint, calls, mean duration.
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
type Histograms = BTreeMap<String, (f64, u64)>;

/// The API server's webhook call histograms as they stand (from its /metrics).
async fn apiserver_webhook_durations(fixture: &Fixture) -> anyhow::Result<Histograms> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = fixture.admin.request_text(request).await?;
    let mut totals = Histograms::new();
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
    Ok(totals)
}

/// Adds what happened between `before` and `after` to `into`.
fn accumulate(into: &mut Histograms, before: &Histograms, after: &Histograms) {
    for (key, (sum, count)) in after {
        let (sum0, count0) = before.get(key).copied().unwrap_or_default();
        let entry = into.entry(key.clone()).or_default();
        entry.0 += sum - sum0;
        entry.1 += count - count0;
    }
}

fn means(histograms: Histograms) -> Vec<(String, u64, Duration)> {
    histograms
        .into_iter()
        .filter(|(_, (_, count))| *count > 0)
        .map(|(key, (sum, count))| (key, count, Duration::from_secs_f64(sum / count as f64)))
        .collect()
}

/// Review counts of every server that may be registered: the real webhook's by endpoint
/// (from its /metrics), and each floor's.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Counts {
    mutate: u64,
    validate: u64,
    floors: Vec<u64>,
}

impl Counts {
    /// Calls each reviewer received between `self` and `later`: the real webhook's as
    /// (mutate, validate), and the floors' in order.
    fn since(&self, later: &Counts) -> (u64, u64, Vec<u64>) {
        (
            later.mutate - self.mutate,
            later.validate - self.validate,
            self.floors
                .iter()
                .zip(&later.floors)
                .map(|(a, b)| b - a)
                .collect(),
        )
    }
}

struct Run<'a> {
    fixture: &'a Fixture,
    target: &'a Target,
    floors: &'a [Floor],
    next_retry: i64,
    next_label: u64,
}

impl Run<'_> {
    async fn counts(&self) -> anyhow::Result<Counts> {
        let text = self.target.get("/metrics").await?;
        let mut counts = Counts {
            mutate: 0,
            validate: 0,
            floors: self.floors.iter().map(Floor::calls).collect(),
        };
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("providers_webhook_admission_requests_total{")
            else {
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

    /// Whether `updates` updates reached exactly `reviewer`, at least once per
    /// configuration each: the API server runs admission again when its update loses a
    /// race with its own watch cache (a conflict it retries internally), so an update may
    /// call a webhook twice, never less than once.
    fn reached(&self, reviewer: Reviewer, before: &Counts, after: &Counts, updates: u64) -> bool {
        let (mutate, validate, floors) = before.since(after);
        let floor_reached = |alpn: Option<Alpn>| {
            self.floors.iter().zip(&floors).all(|(floor, &calls)| {
                if Some(floor.alpn) == alpn {
                    calls >= 2 * updates
                } else {
                    calls == 0
                }
            })
        };
        match reviewer {
            Reviewer::Webhook => mutate >= updates && validate >= updates && floor_reached(None),
            Reviewer::Nothing => mutate == 0 && validate == 0 && floor_reached(None),
            Reviewer::Floor(alpn) => mutate == 0 && validate == 0 && floor_reached(Some(alpn)),
        }
    }

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

    /// Registers `reviewer` and updates until one update reaches it and nothing else.
    async fn switch_to(&mut self, reviewer: Reviewer) -> anyhow::Result<()> {
        let info = &self.fixture.plane.info;
        match reviewer {
            Reviewer::Webhook => self.fixture.webhook.register(info).await?,
            Reviewer::Nothing => Webhook::unregister(info)?,
            Reviewer::Floor(alpn) => self
                .floors
                .iter()
                .find(|floor| floor.alpn == alpn)
                .context("no such floor")?
                .register(info)?,
        }
        for _ in 0..PROPAGATION_TRIES {
            let before = self.counts().await?;
            self.bump_retry().await?;
            let after = self.counts().await?;
            if self.reached(reviewer, &before, &after, 1) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("the API server did not switch to {}", reviewer.describe())
    }

    /// One block: warm-up, then measured retry bumps and label changes, checked against the
    /// counters; the samples, the calls and the API server's account of the retry bumps go
    /// into `measured`.
    async fn block(
        &mut self,
        reviewer: Reviewer,
        settings: &Settings,
        measured: &mut Samples,
    ) -> anyhow::Result<()> {
        for _ in 0..settings.warmup {
            self.bump_retry().await?;
            self.relabel().await?;
        }
        let before = self.counts().await?;
        let histograms_before = apiserver_webhook_durations(self.fixture).await?;
        for _ in 0..settings.updates {
            let took = self.bump_retry().await?;
            measured.retry.push(took);
        }
        let middle = self.counts().await?;
        let histograms_after = apiserver_webhook_durations(self.fixture).await?;
        for _ in 0..settings.updates {
            let took = self.relabel().await?;
            measured.label.push(took);
        }
        let after = self.counts().await?;
        let n = settings.updates as u64;
        if !self.reached(reviewer, &before, &middle, n) {
            bail!(
                "{n} retry updates did not reach exactly {}: {before:?} -> {middle:?}",
                reviewer.describe()
            );
        }
        if after != middle {
            bail!("label updates reached a webhook: {middle:?} -> {after:?}");
        }
        let (mutate, validate, floors) = before.since(&middle);
        measured.calls += mutate + validate + floors.iter().sum::<u64>();
        accumulate(
            &mut measured.histograms,
            &histograms_before,
            &histograms_after,
        );
        Ok(())
    }
}

#[derive(Default)]
struct Samples {
    retry: Vec<Duration>,
    label: Vec<Duration>,
    calls: u64,
    histograms: Histograms,
}

pub async fn measure(
    fixture: &Fixture,
    target: &Target,
    settings: &Settings,
) -> anyhow::Result<Report> {
    let floors = [Floor::start(Alpn::Http2)?, Floor::start(Alpn::Http1)?];
    fixture.create(WORKSPACE).await?;
    fixture.finish(WORKSPACE, "Succeeded").await?;
    let webhook_before = webhook_durations(target).await?;
    let mut run = Run {
        fixture,
        target,
        floors: &floors,
        next_retry: 1,
        next_label: 0,
    };
    let reviewers = [
        Reviewer::Webhook,
        Reviewer::Nothing,
        Reviewer::Floor(Alpn::Http2),
        Reviewer::Floor(Alpn::Http1),
    ];
    let mut samples: Vec<Samples> = reviewers.iter().map(|_| Samples::default()).collect();
    for _ in 0..settings.rounds {
        for (reviewer, samples) in reviewers.iter().zip(&mut samples) {
            run.switch_to(*reviewer).await?;
            run.block(*reviewer, settings, samples)
                .await
                .with_context(|| format!("with {}", reviewer.describe()))?;
        }
    }
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
    run.switch_to(Reviewer::Webhook).await?;
    Ok(Report {
        measured: reviewers
            .into_iter()
            .zip(samples)
            .map(|(reviewer, samples)| Measured {
                reviewer,
                retry: Latencies::new(samples.retry),
                label: Latencies::new(samples.label),
                calls: samples.calls,
                apiserver_view: means(samples.histograms),
            })
            .collect(),
        webhook_view,
    })
}
