//! Percentiles of latency samples.

use std::time::Duration;

/// Latency samples, sorted once for the percentiles.
pub struct Latencies {
    sorted: Vec<Duration>,
}

impl Latencies {
    pub fn new(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        Self { sorted: samples }
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// The nearest-rank percentile `p` (0 < p <= 100); zero when there are no samples.
    pub fn percentile(&self, p: f64) -> Duration {
        if self.sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }

    pub fn median(&self) -> Duration {
        self.percentile(50.0)
    }

    pub fn max(&self) -> Duration {
        self.sorted.last().copied().unwrap_or_default()
    }

    pub fn mean(&self) -> Duration {
        if self.sorted.is_empty() {
            return Duration::ZERO;
        }
        self.sorted.iter().sum::<Duration>() / self.sorted.len() as u32
    }
}

/// Milliseconds with three decimals, for tables.
pub fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}
