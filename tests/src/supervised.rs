//! A control plane run by the `providers-controlplane` binary as a child process.
//!
//! The child holds the processes; it tears them down and removes its folder when its
//! stdin closes. A test process that ends in any way (return, panic, abort) closes that
//! pipe, so no etcd or kube-apiserver outlives the tests, even for a control plane kept
//! in a `static`, whose destructor never runs.

use std::{
    io::{BufRead, BufReader, Lines, Write},
    path::Path,
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    sync::{Mutex, OnceLock},
};

use anyhow::{Context, bail};

use crate::controlplane::ControlPlaneInfo;

/// A supervised control plane. Dropping it tears the control plane down.
pub struct Supervised {
    pub info: ControlPlaneInfo,
    child: Child,
    stdin: Option<ChildStdin>,
    /// The child's answers to commands on its stdin.
    answers: Mutex<Lines<BufReader<ChildStdout>>>,
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
        let mut lines = BufReader::new(stdout).lines();
        for line in lines.by_ref() {
            let line = line?;
            if let Some(json) = line.strip_prefix("ready ") {
                let info: ControlPlaneInfo = serde_json::from_str(json)?;
                return Ok(Self {
                    info,
                    child,
                    stdin,
                    answers: Mutex::new(lines),
                });
            }
        }
        let status = child.wait()?;
        bail!("control plane {name} did not start ({status}); see the lines above")
    }

    /// Restarts the kube-apiserver (killed, started again on the same port and etcd) and
    /// waits until it is ready. Blocking: call it from `spawn_blocking` in async code.
    pub fn restart_apiserver(&self) -> anyhow::Result<()> {
        let mut answers = self
            .answers
            .lock()
            .map_err(|_| anyhow::anyhow!("a restart panicked"))?;
        let mut stdin = self
            .stdin
            .as_ref()
            .context("the control plane is stopping")?;
        stdin.write_all(b"restart-apiserver\n")?;
        stdin.flush()?;
        match answers.next().transpose()? {
            Some(line) if line == "restarted" => Ok(()),
            Some(line) => bail!("restarting {}'s kube-apiserver: {line}", self.info.name),
            None => bail!("the control plane {} ended", self.info.name),
        }
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
