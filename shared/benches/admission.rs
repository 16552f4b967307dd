//! Criterion benchmarks of the admission decision (SubjectAccessReview excluded).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

mod fixtures;

fn admission(c: &mut Criterion) {
    let fixture = fixtures::Fixture::default();
    c.bench_function("create: resolve, check values, seal, validate", |b| {
        b.iter(|| black_box(fixture.create()).expect("admitted"))
    });
    c.bench_function("mutate only: resolve, check values, seal", |b| {
        b.iter(|| black_box(fixture.mutate_create()).expect("sealed"))
    });
    let sealed = fixture.mutate_create().expect("sealed");
    c.bench_function("validate only, seal signed in this process", |b| {
        b.iter(|| black_box(fixture.validate_create(&sealed)).expect("valid"))
    });
    // A keyring of its own has noted nothing: the seal is verified in full.
    let elsewhere = providers_shared::seal::Keyring::from(&fixture.sealer);
    c.bench_function("validate only, seal verified in full", |b| {
        b.iter(|| black_box(fixture.validate_create_with(&sealed, &elsewhere)).expect("valid"))
    });
    c.bench_function("update keeping the plan: decide + validate", |b| {
        b.iter(|| assert!(black_box(fixture.keep())))
    });
    c.bench_function("update of a pinned field: denied", |b| {
        b.iter(|| assert!(black_box(fixture.deny())))
    });
    // A Workspace as the demo's API server stored it after its first attempt (managed fields,
    // spec.plan, and the same plan kept for rollback in status): what the webhook decodes
    // twice per update and the installer once per watch event.
    let stored = include_str!("fixtures/stored-workspace.json");
    c.bench_function("decode a stored Workspace", |b| {
        b.iter(|| {
            black_box(serde_json::from_str::<providers_shared::api::Workspace>(
                black_box(stored),
            ))
            .expect("decoded")
        })
    });
}

criterion_group!(benches, admission);
criterion_main!(benches);
