//! The import graph of every crate of the workspace is acyclic at file level: files read
//! top-down, and no two files (or more) name each other round a circle. An edge A -> B is
//! A naming a module written in B (`imports.rs` says exactly what counts); each circle is
//! reported with its files and the edges inside it.
//!
//! Test-only code (a module under `#[cfg(test)]`, inline or a file) may name what it
//! tests: its edges to code that is not test-only are left out, since nothing outside the
//! tests can name it back. A circle among test-only files still fails.
//!
//! The installer's files also read down its layers (`layers.rs`): none names a file of a
//! layer above its own, as `webhook/installer/src/LAYERS` orders them.
//!
//! Run alone: `cargo test -p providers-tests --test import_graph`.

mod circles;
mod imports;
mod layers;
mod lex;
mod modules;
mod planted;

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

use imports::Edge;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The workspace's members, from its Cargo.toml (`members = ["shared", ...]`).
fn members(workspace: &Path) -> Vec<String> {
    let manifest =
        fs::read_to_string(workspace.join("Cargo.toml")).expect("the workspace's Cargo.toml");
    let line = manifest
        .lines()
        .find(|line| line.trim_start().starts_with("members"))
        .expect("a members line in the workspace's Cargo.toml");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Every crate root of a package: its library, binaries, integration tests and benches.
fn crate_roots(workspace: &Path, package: &str) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for file in ["src/lib.rs", "src/main.rs"] {
        let root = Path::new(package).join(file);
        if workspace.join(&root).is_file() {
            roots.push(root);
        }
    }
    for dir in ["src/bin", "tests", "benches", "examples"] {
        let dir = Path::new(package).join(dir);
        let Ok(entries) = fs::read_dir(workspace.join(&dir)) else {
            continue;
        };
        let mut names: Vec<_> = entries.flatten().map(|entry| entry.file_name()).collect();
        names.sort();
        for name in names {
            let path = dir.join(&name);
            if path.extension().is_some_and(|ext| ext == "rs") {
                roots.push(path);
            } else if workspace.join(&path).join("main.rs").is_file() {
                roots.push(path.join("main.rs"));
            }
        }
    }
    roots
}

fn workspace_edges(workspace: &Path) -> BTreeSet<Edge> {
    let read = |path: &Path| fs::read_to_string(workspace.join(path)).ok();
    let mut edges = BTreeSet::new();
    for root in members(workspace)
        .iter()
        .flat_map(|package| crate_roots(workspace, package))
    {
        let krate = modules::load_crate(&root, &read);
        // A module file chosen by `#[path]` would be read from the wrong place.
        for file in &krate.files {
            assert!(
                !modules::has_path_attribute(&file.tokens),
                "{}: a #[path] attribute, which this check does not follow",
                file.path.display()
            );
        }
        edges.extend(imports::edges(&krate));
    }
    edges
}

fn show((from, to): &Edge) -> String {
    format!("{} -> {}", from.display(), to.display())
}

#[test]
fn every_crate_reads_top_down() {
    let workspace = workspace();
    let members = members(&workspace);
    assert!(
        members.iter().any(|member| member == "shared"),
        "the workspace's members, as read: {members:?}"
    );
    let edges = workspace_edges(&workspace);
    assert!(
        edges.len() > 100,
        "the scan found only {} edges: are the crates where it looks?",
        edges.len()
    );
    let found = circles::circles(&edges);
    let mut report = String::new();
    for circle in &found {
        report += &format!("\nimport circle of {} files:\n", circle.files.len());
        for edge in &circle.edges {
            report += &format!("  {}\n", show(edge));
        }
    }
    assert!(
        found.is_empty(),
        "{} import circles: move what the lower files need into a module of its own{report}",
        found.len()
    );
}

#[test]
fn the_installer_names_only_its_own_layer_and_those_below() {
    let workspace = workspace();
    let order = fs::read_to_string(workspace.join(layers::LAYERS)).expect("the LAYERS file");
    let order = layers::read(&order);
    assert!(
        order.len() >= 3,
        "{}: the layers, as read: {order:?}",
        layers::LAYERS
    );
    let files = layers::files(&workspace);
    assert!(
        files.len() > 40,
        "only {} files under {}: is the controller where the check looks?",
        files.len(),
        layers::CONTROLLER
    );
    let edges: Vec<Edge> = workspace_edges(&workspace).into_iter().collect();
    let within = edges
        .iter()
        .filter(|(from, to)| {
            from.starts_with(layers::CONTROLLER) && to.starts_with(layers::CONTROLLER)
        })
        .count();
    assert!(
        within > 50,
        "only {within} edges inside the controller: does the scan name its files as the check does?"
    );
    let found = layers::violations(Path::new(layers::CONTROLLER), &order, &files, &edges);
    assert!(
        found.is_empty(),
        "{} names across the installer's layers go the wrong way:\n{}",
        found.len(),
        found.join("\n")
    );
}
