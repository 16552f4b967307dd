//! The README's demo, run non-interactively end to end: two control planes, the webhook,
//! the installer, the job runner with a real helm, and the scripted `kubectl provider`
//! session, each step checked by the demo itself.

use std::process::Command;

use providers_tests::binaries;

#[test]
fn the_demo_runs_its_scripted_session_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(binaries::cargo_bin("providers-demo").unwrap())
        .arg("--dir")
        .arg(dir.path().join("demo"))
        .arg("--exit-after-session")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the demo failed:\n{stdout}\n{stderr}");
    for line in [
        "[alice] $ kubectl provider install greeter --recipe hello --edge edge-1",
        "hi from alice",
        "error: spec.values.image: recipe \"hello\" does not let tenants set this path",
        "attempt 1 failed",
        "attempt 2 succeeded",
        "The scripted session finished.",
    ] {
        assert!(stdout.contains(line), "{line:?} missing from:\n{stdout}");
    }
    assert!(
        !dir.path().join("demo").exists(),
        "the demo removes its folder"
    );
    // A clean stop: the job runner stops before the edge's API server does, so neither
    // its watch nor its list of Jobs reports the server going away.
    for error in ["jobrunner: listing Jobs", "jobrunner: watching Jobs"] {
        assert!(!stderr.contains(error), "{error:?} in:\n{stderr}");
    }
}
