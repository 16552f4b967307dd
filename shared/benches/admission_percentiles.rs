//! Latency percentiles of the admission decision: each call timed on its own, many times.
//! Criterion reports means and confidence intervals; the target is stated at p99.

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

mod fixtures;

fn percentiles(name: &str, iterations: usize, mut call: impl FnMut()) {
    for _ in 0..iterations / 10 {
        call();
    }
    let mut samples: Vec<Duration> = (0..iterations)
        .map(|_| {
            let started = Instant::now();
            call();
            started.elapsed()
        })
        .collect();
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    println!(
        "{name:<48} n={iterations:<7} p50={:>8.1?} p90={:>8.1?} p99={:>8.1?} p99.9={:>8.1?} max={:>8.1?}",
        at(0.50),
        at(0.90),
        at(0.99),
        at(0.999),
        samples[samples.len() - 1]
    );
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not run benches with harness = false.
    let iterations = std::env::var("ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let fixture = fixtures::Fixture::default();
    percentiles(
        "create: resolve, check values, seal, validate",
        iterations,
        || {
            black_box(fixture.create()).expect("admitted");
        },
    );
    percentiles(
        "mutate only: resolve, check values, seal",
        iterations,
        || {
            black_box(fixture.mutate_create()).expect("sealed");
        },
    );
    let sealed = fixture.mutate_create().expect("sealed");
    percentiles(
        "validate only, seal signed in this process",
        iterations,
        || {
            black_box(fixture.validate_create(&sealed)).expect("valid");
        },
    );
    // A keyring of its own has noted nothing: the seal is verified in full.
    let elsewhere = providers_shared::seal::Keyring::from(&fixture.sealer);
    percentiles("validate only, seal verified in full", iterations, || {
        black_box(fixture.validate_create_with(&sealed, &elsewhere)).expect("valid");
    });
    percentiles("Ed25519 verify alone (full)", iterations, || {
        black_box(elsewhere.verify(&sealed)).expect("valid");
    });
    percentiles(
        "update keeping the plan: decide + validate",
        iterations,
        || assert!(black_box(fixture.keep())),
    );
    percentiles("update of a pinned field: denied", iterations, || {
        assert!(black_box(fixture.deny()))
    });
}
