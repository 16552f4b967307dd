//! A control plane run by the `providers-controlplane` binary as a child process.
//!
//! The child holds the processes; it tears them down and removes its folder when its
//! stdin closes. A test process that ends in any way (return, panic, abort) closes that
//! pipe, so no etcd or kube-apiserver outlives the tests, even for a control plane kept
//! in a `static`, whose destructor never runs.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, ChildStdin, Command, Stdio},
    sync::OnceLock,
};

use anyhow::{Context, bail};

use crate::controlplane::ControlPlaneInfo;

/// A supervised control plane. Dropping it tears the control plane down.
pub struct Supervised {
    pub info: ControlPlaneInfo,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Supervised {
    /// Starts a control plane named `name` with the `providers-controlplane` binary at `bin`
    /// (in integration tests: `env!("CARGO_BIN_EXE_providers-controlplane")`).
    pub fn start(bin: &Path, name: &str) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("providers-{name}-"))
            .tempdir()?
            .keep();
        let mut child = Command::new(bin)
            .args([
                "up",
                "--name",
                name,
                "--until-stdin-closes",
                "--remove-dir",
                "--dir",
            ])
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stdout = child.stdout.take().context("child stdout")?;
        let stdin = child.stdin.take();
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            if let Some(json) = line.strip_prefix("ready ") {
                let info: ControlPlaneInfo = serde_json::from_str(json)?;
                return Ok(Self { info, child, stdin });
            }
        }
        let status = child.wait()?;
        bail!("control plane {name} did not start ({status}); see the lines above")
    }

    /// Tears the control plane down now and waits until it is gone.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.stdin.take();
        self.child.wait()?;
        Ok(())
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stdin.take();
        let _ = self.child.wait();
    }
}

/// One hub control plane shared by every test in a test binary; tests isolate themselves
/// by namespace and object names.
pub fn shared(bin: &Path) -> &'static ControlPlaneInfo {
    static SHARED: OnceLock<Supervised> = OnceLock::new();
    &SHARED
        .get_or_init(|| {
            Supervised::start(bin, "hub").expect("the shared test control plane starts")
        })
        .info
}
