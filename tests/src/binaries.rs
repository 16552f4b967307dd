//! Where the Go-built binaries are: `target/controlplane/bin` (written by
//! `tests/controlplane/build.sh`), or the folder in `PROVIDERS_CONTROLPLANE_BIN`.

use std::path::PathBuf;

use anyhow::{Context, bail};

/// The folder holding etcd, kube-apiserver and helm.
pub fn dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("PROVIDERS_CONTROLPLANE_BIN") {
        return Ok(PathBuf::from(dir));
    }
    Ok(workspace_root()?.join("target/controlplane/bin"))
}

/// The path of one binary, checked to exist.
pub fn path(name: &str) -> anyhow::Result<PathBuf> {
    let path = dir()?.join(name);
    if !path.exists() {
        bail!(
            "{} is missing: run tests/controlplane/build.sh first (it builds etcd, kube-apiserver and helm)",
            path.display()
        );
    }
    Ok(path)
}

/// The Cargo workspace's root folder.
pub fn workspace_root() -> anyhow::Result<PathBuf> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = here.parent().context("tests/ has a parent folder")?;
    Ok(root.to_path_buf())
}

/// The Rust files under `path` (a file, or a folder read recursively), sorted.
pub fn rust_files(path: &std::path::Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        let entry = entry.path();
        if entry.is_dir() {
            files.extend(rust_files(&entry));
        } else if entry.extension().is_some_and(|e| e == "rs") {
            files.push(entry);
        }
    }
    files.sort();
    files
}

/// A binary of this workspace, built by `cargo build --workspace --bins` into the same
/// target folder as the running test (`target/<profile>/`).
pub fn cargo_bin(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // A test runs from target/<profile>/deps/, a binary from target/<profile>/.
    let mut profile_dir = exe.parent().context("the executable has a folder")?;
    if profile_dir.file_name().is_some_and(|n| n == "deps") {
        profile_dir = profile_dir.parent().context("deps/ has a parent folder")?;
    }
    let path = profile_dir.join(name);
    if !path.exists() {
        bail!(
            "{} is missing: build the workspace's binaries first (`cargo build --workspace --bins`, as tests/run.sh does)",
            path.display()
        );
    }
    Ok(path)
}
