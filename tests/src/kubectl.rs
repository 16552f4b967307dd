//! The real `kubectl`, run with a given kubeconfig.

use std::{
    path::Path,
    process::{Command, Output},
};

use anyhow::{Context, bail};

/// Runs `kubectl` with `args` against the kubeconfig; returns its output whatever the exit code.
pub fn run(kubeconfig: &Path, args: &[&str]) -> anyhow::Result<Output> {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .context("running kubectl (is it on PATH?)")
}

/// Runs `kubectl` and fails with its stderr unless it exits 0; returns stdout.
pub fn ok(kubeconfig: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = run(kubeconfig, args)?;
    if !out.status.success() {
        bail!(
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
