//! What a test reads about a running process from /proc.

use anyhow::{Context, bail};

/// The PID of the `providers-webhook serve` process listening on 127.0.0.1:`port`.
pub fn webhook_pid(port: u16) -> anyhow::Result<u32> {
    let listen = format!("127.0.0.1:{port}");
    for entry in std::fs::read_dir("/proc")? {
        let entry = entry?;
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_webhook = args
            .first()
            .is_some_and(|a| a.ends_with(b"providers-webhook"));
        if is_webhook && args.contains(&&b"serve"[..]) && args.contains(&listen.as_bytes()) {
            return Ok(pid);
        }
    }
    bail!("no providers-webhook serve process listens on {listen}")
}

/// The peak and the current resident set size of a process (VmHWM, VmRSS), in KiB.
pub fn memory_kib(pid: u32) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> anyhow::Result<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .with_context(|| format!("{name} in /proc/{pid}/status"))?;
        Ok(line.split_whitespace().nth(1).context("value")?.parse()?)
    };
    Ok((field("VmHWM:")?, field("VmRSS:")?))
}

/// Sends `signal` (`TERM`, `KILL`, `STOP`, `CONT`) to the process `pid` with `kill`.
pub fn signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()?;
    if !status.success() {
        bail!("kill -{signal} {pid} failed");
    }
    Ok(())
}
