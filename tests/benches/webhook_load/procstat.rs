//! What /proc says about a process and the machine: CPU time, resident memory, and pinning
//! to CPUs with the real `taskset`.

use std::{process::Command, time::Instant};

use anyhow::{Context, bail};

pub use providers_tests::process::{memory_kib, webhook_pid};

/// Clock ticks per second of /proc/<pid>/stat times.
pub fn clock_ticks() -> anyhow::Result<f64> {
    let out = Command::new("getconf").arg("CLK_TCK").output()?;
    let text = String::from_utf8(out.stdout)?;
    text.trim().parse::<f64>().context("CLK_TCK")
}

/// User + system CPU time of a whole process (all threads), in clock ticks.
pub fn process_ticks(pid: &str) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').context("stat format")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after ')'.
    let utime: u64 = fields.get(11).context("utime")?.parse()?;
    let stime: u64 = fields.get(12).context("stime")?.parse()?;
    Ok(utime + stime)
}

/// Busy and total ticks of all CPUs, from /proc/stat.
pub fn machine_ticks() -> anyhow::Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat.lines().next().context("/proc/stat")?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let total: u64 = values.iter().take(8).sum();
    // idle and iowait are the 4th and 5th values.
    let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
    Ok((total - idle, total))
}

/// Restricts every thread of `pid` (and threads it starts later) to `cpus`, e.g. "0".
pub fn pin(pid: u32, cpus: &str) -> anyhow::Result<()> {
    let out = Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .output()
        .context("running taskset")?;
    if !out.status.success() {
        bail!("taskset failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Pids of the processes with an argument that contains `needle` (the control plane's
/// etcd and kube-apiserver name their folder in their arguments).
pub fn pids_with_argument(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline);
            (pid != std::process::id() && text.split('\0').any(|a| a.contains(needle)))
                .then_some(pid)
        })
        .collect()
}

/// CPU use over a window: of the webhook, of this process, of the bench's control plane, and
/// of the whole machine.
pub struct CpuWindow {
    ticks_per_second: f64,
    webhook_pid: String,
    plane_pids: Vec<String>,
    started: Instant,
    webhook: u64,
    this: u64,
    plane: u64,
    machine_busy: u64,
}

/// Cores in use on average over a window (1.0 = one core fully busy).
#[derive(Clone, Copy, Debug)]
pub struct CpuUse {
    pub webhook: f64,
    pub generator: f64,
    /// The bench's own etcd and kube-apiserver.
    pub control_plane: f64,
    /// Everything else on the machine: the kernel's share not charged to a process, and
    /// other people's processes.
    pub others: f64,
}

fn sum_ticks(pids: &[String]) -> u64 {
    // A process that has gone away counts as nothing.
    pids.iter().filter_map(|p| process_ticks(p).ok()).sum()
}

impl CpuWindow {
    pub fn start(
        ticks_per_second: f64,
        webhook_pid: u32,
        plane_pids: &[u32],
    ) -> anyhow::Result<Self> {
        let webhook_pid = webhook_pid.to_string();
        let plane_pids: Vec<String> = plane_pids.iter().map(u32::to_string).collect();
        Ok(Self {
            ticks_per_second,
            webhook: process_ticks(&webhook_pid)?,
            this: process_ticks("self")?,
            plane: sum_ticks(&plane_pids),
            machine_busy: machine_ticks()?.0,
            started: Instant::now(),
            webhook_pid,
            plane_pids,
        })
    }

    pub fn finish(&self) -> anyhow::Result<CpuUse> {
        let seconds = self.started.elapsed().as_secs_f64();
        let cores = |ticks: u64| ticks as f64 / self.ticks_per_second / seconds;
        let webhook = cores(process_ticks(&self.webhook_pid)? - self.webhook);
        let generator = cores(process_ticks("self")? - self.this);
        let control_plane = cores(sum_ticks(&self.plane_pids).saturating_sub(self.plane));
        let machine = cores(machine_ticks()?.0 - self.machine_busy);
        Ok(CpuUse {
            webhook,
            generator,
            control_plane,
            others: (machine - webhook - generator - control_plane).max(0.0),
        })
    }
}

/// Waits (at most `limit`) until `pids` together use under a tenth of a core over a
/// second; returns the cores they used in the last second.
pub async fn wait_until_idle(
    ticks_per_second: f64,
    pids: &[u32],
    limit: std::time::Duration,
) -> f64 {
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    let started = Instant::now();
    loop {
        let before = sum_ticks(&pids);
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let cores = sum_ticks(&pids).saturating_sub(before) as f64 / ticks_per_second;
        if cores < 0.1 || started.elapsed() >= limit {
            return cores;
        }
    }
}

/// The machine, for the report.
pub fn describe_machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cpus} CPUs ({model}), Linux {}", kernel.trim())
}

/// This process's nice value; the control plane and the webhook it starts inherit it.
pub fn niceness() -> anyhow::Result<i64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let rest = stat.rsplit_once(')').context("stat format")?.1;
    // nice is field 19 of the whole line, 17 after ')'.
    Ok(rest.split_whitespace().nth(16).context("nice")?.parse()?)
}

/// The load averages, for the report.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
