//! The checked-in CRDs must be exactly what the Rust types render.

use std::path::Path;

use providers_generators::crd;

fn checked_in() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../manifests/crds"))
}

#[test]
fn checked_in_crds_match_the_types() {
    let drifted = crd::drift(checked_in());
    assert!(drifted.is_empty(), "{}", drifted.join("\n"));
}

#[test]
fn the_chart_carries_the_same_crds() {
    let chart = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../charts/providers/crds"
    ));
    let drifted = crd::drift(chart);
    assert!(drifted.is_empty(), "{}", drifted.join("\n"));
}

#[test]
fn a_changed_type_is_reported_as_drift() {
    // Render what a changed type would give (a new field in the Workspace spec), and check
    // it against the checked-in files: the check must catch it.
    let mut crds = crd::all();
    let (_, workspace) = crds
        .iter_mut()
        .find(|(file, _)| *file == "workspaces.yaml")
        .expect("workspaces CRD");
    let schema = workspace.spec.versions[0]
        .schema
        .as_mut()
        .and_then(|s| s.open_api_v3_schema.as_mut())
        .expect("schema");
    let spec = schema
        .properties
        .as_mut()
        .and_then(|p| p.get_mut("spec"))
        .expect("spec");
    spec.properties
        .as_mut()
        .expect("spec properties")
        .insert("newField".to_owned(), Default::default());
    let drifted = crd::drift_of(checked_in(), crds);
    assert_eq!(drifted.len(), 1, "{drifted:?}");
    assert!(
        drifted[0].contains("workspaces.yaml") && drifted[0].contains("crdgen"),
        "{}",
        drifted[0]
    );
}

#[test]
fn the_api_reference_matches_the_types() {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/api-reference.md"
    ));
    let checked_in = std::fs::read_to_string(path).expect("docs/api-reference.md exists");
    assert!(
        checked_in == providers_generators::reference::markdown(&crd::all()),
        "docs/api-reference.md differs from the types: run `cargo run -p providers-generators --bin crdgen`"
    );
}

#[test]
fn the_values_bounds_policy_matches_the_limits() {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../manifests/policies"
    ))
    .join(providers_generators::policy::VALUES_BOUNDS_FILE);
    let checked_in = std::fs::read_to_string(&path).expect("the policy is checked in");
    assert!(
        checked_in == providers_generators::policy::values_bounds(),
        "{} differs from the limits: run `cargo run -p providers-generators --bin crdgen`",
        path.display()
    );
}
