//! Running `kubectl provider`: the real `kubectl` with the `kubectl-provider` binary on
//! its PATH.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context, bail};

use crate::binaries;

/// What a `kubectl provider` run printed, and its exit code.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Fails unless the command exited 0; returns stdout.
    pub fn ok(&self) -> anyhow::Result<&str> {
        if self.code != 0 {
            bail!(
                "kubectl provider exited {}:\nstdout:\n{}\nstderr:\n{}",
                self.code,
                self.stdout,
                self.stderr
            );
        }
        Ok(&self.stdout)
    }

    /// Fails unless the command exited non-zero; returns stderr.
    pub fn failed(&self) -> anyhow::Result<&str> {
        if self.code == 0 {
            bail!(
                "kubectl provider succeeded but should have failed:\nstdout:\n{}\nstderr:\n{}",
                self.stdout,
                self.stderr
            );
        }
        Ok(&self.stderr)
    }
}

/// The folder holding the built `kubectl-provider`.
pub fn plugin_dir() -> anyhow::Result<PathBuf> {
    let bin = binaries::cargo_bin("kubectl-provider")?;
    Ok(bin
        .parent()
        .context("the binary has a folder")?
        .to_path_buf())
}

/// A PATH with the plugin's folder first.
pub fn path_with_plugin() -> anyhow::Result<OsString> {
    let mut dirs = vec![plugin_dir()?];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    Ok(std::env::join_paths(dirs)?)
}

/// A `kubectl provider ARGS` command (nothing else set: no kubeconfig).
pub fn command(args: &[&str]) -> anyhow::Result<Command> {
    let mut command = Command::new("kubectl");
    command
        .arg("provider")
        .args(args)
        .env("PATH", path_with_plugin()?)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null());
    Ok(command)
}

/// Runs a command and collects what it printed.
pub fn collect(mut command: Command) -> anyhow::Result<Run> {
    let out = command
        .output()
        .context("running kubectl (is it on PATH?)")?;
    Ok(Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Runs `kubectl provider ARGS --kubeconfig KUBECONFIG`.
pub fn run(kubeconfig: &Path, args: &[&str]) -> anyhow::Result<Run> {
    let mut command = command(args)?;
    command.arg("--kubeconfig").arg(kubeconfig);
    collect(command)
}

/// Runs `kubectl provider ARGS` with no cluster at all (help, version, completion).
pub fn run_offline(args: &[&str]) -> anyhow::Result<Run> {
    collect(command(args)?)
}
