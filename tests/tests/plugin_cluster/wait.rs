//! --wait: following an attempt to its end, or to the timeout.

use super::*;

#[test]
fn wait_follows_an_attempt_until_it_is_ready() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    plugin::run(
        alice,
        &[
            "install", "waited", "--recipe", "podinfo", "--edge", "edge-1",
        ],
    )?
    .ok()?;
    seal(plane, "org-a", "waited", 1, PUBLISHED)?;
    let mut command = plugin::command(&["status", "waited", "--wait", "--timeout", "60s"])?;
    command
        .arg("--kubeconfig")
        .arg(alice)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn()?;
    std::thread::sleep(Duration::from_millis(1500));
    write_status(plane, "org-a", "waited", running("waited", 1))?;
    std::thread::sleep(Duration::from_millis(1500));
    write_status(plane, "org-a", "waited", succeeded("waited", 1))?;
    let out = child.wait_with_output()?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Piped, progress is one plain line per change.
    assert_eq!(
        stderr,
        "waiting: attempt 1 sealed, waiting for the installer\n\
         waiting: attempt 1 running (job podinfo-waited-1): JobRunning: helm upgrade --install is running\n"
    );
    assert!(stdout.contains("Phase:      Succeeded"), "{stdout}");
    Ok(())
}

#[test]
fn install_wait_fails_when_the_attempt_fails() -> anyhow::Result<()> {
    let plane = plane();
    let mut command = plugin::command(&[
        "install",
        "doomed",
        "--recipe",
        "podinfo",
        "--edge",
        "edge-1",
        "--wait",
        "--timeout",
        "60s",
    ])?;
    command
        .arg("--kubeconfig")
        .arg(plane.kubeconfig(User::Alice))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn()?;
    wait_for(plane, "org-a", "doomed")?;
    seal(plane, "org-a", "doomed", 1, PUBLISHED)?;
    write_status(plane, "org-a", "doomed", failed("doomed", 1))?;
    let out = child.wait_with_output()?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(stdout, "workspace.providers.platform.dev/doomed created\n");
    let last: Vec<&str> = stderr
        .lines()
        .skip_while(|l| l.starts_with("waiting: "))
        .collect();
    assert_eq!(
        last,
        [
            "error: doomed: attempt 1 failed: helm exited 1: context deadline exceeded",
            "hint: see kubectl provider status doomed -n org-a; after a failure: kubectl provider retry doomed -n org-a",
        ],
        "{stderr}"
    );
    Ok(())
}

#[test]
fn wait_gives_up_at_the_timeout_and_says_where_it_was() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    let started = std::time::Instant::now();
    let run = plugin::run(
        alice,
        &[
            "install",
            "slow",
            "--recipe",
            "podinfo",
            "--edge",
            "edge-1",
            "--wait",
            "--timeout",
            "2s",
        ],
    )?;
    let stderr = run.failed()?;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        stderr.contains(
            "error: timed out after 2s waiting for slow: waiting for the webhook to seal the plan"
        ),
        "{stderr}"
    );
    Ok(())
}
