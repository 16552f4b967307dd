//! `kubectl provider` with the real admission webhook registered on the real API server:
//! the webhook seals, restores and pins plans, and its denials reach the user as the
//! webhook wrote them, on one line.

use std::{path::Path, process::Stdio, sync::OnceLock};

use providers_tests::{
    ControlPlaneInfo, User, kubectl,
    plugin::{
        self,
        fixture::{
            REPOSITORY, assert_one_error_line, get, install_as_alice, install_catalog, plan_values,
            wait_for, write_status,
        },
    },
    supervised,
    webhook::Webhook,
};
use serde_json::json;

struct Fixture {
    plane: &'static ControlPlaneInfo,
    webhook: Webhook,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
        install_catalog(plane).expect("catalog");
        let webhook = Webhook::start(plane, &[REPOSITORY]).expect("the webhook starts");
        // Registered on a runtime of its own: the first caller may be inside another.
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    tokio::runtime::Runtime::new()
                        .expect("runtime")
                        .block_on(webhook.register(plane))
                })
                .join()
        })
        .expect("registering does not panic")
        .expect("the webhook is registered");
        Fixture { plane, webhook }
    })
}

/// Records a terminal result for the sealed attempt, as the installer does.
fn finish(plane: &ControlPlaneInfo, name: &str, result: &str) -> anyhow::Result<()> {
    let plan = &get(plane, "org-a", name)?["spec"]["plan"];
    write_status(
        plane,
        "org-a",
        name,
        json!({"phase": result, "attempt": plan["attempt"], "attemptID": plan["attemptID"],
               "jobResult": result, "finishedAt": "2026-01-01T10:00:00Z"}),
    )
}

#[test]
fn install_is_sealed_by_the_webhook_and_a_second_install_changes_nothing() -> anyhow::Result<()> {
    let Fixture { plane, webhook } = fixture();
    let args = ["--set", "replicaCount=2"];
    assert_eq!(
        install_as_alice(plane, "sealed", &args)?,
        "workspace.providers.platform.dev/sealed created\n"
    );
    let first = get(plane, "org-a", "sealed")?;
    let plan = &first["spec"]["plan"];
    assert_eq!(plan["attempt"], 1);
    assert_eq!(plan["owner"]["username"], "alice");
    assert_eq!(plan_values(plane, plan)?["replicaCount"], 2);
    assert_eq!(plan["seal"]["keyID"], webhook.key_id.as_str());

    // The same manifest again: the webhook restores the plan the apply omits; no change.
    assert_eq!(
        install_as_alice(plane, "sealed", &args)?,
        "workspace.providers.platform.dev/sealed unchanged\n"
    );
    let second = get(plane, "org-a", "sealed")?;
    assert_eq!(second["spec"]["plan"], first["spec"]["plan"]);
    assert_eq!(
        first["metadata"]["generation"],
        second["metadata"]["generation"]
    );
    // No installer runs here: the first write after creation stores the status default
    // every read already showed (ADR 23); from then on nothing is stored at all.
    assert_eq!(
        install_as_alice(plane, "sealed", &args)?,
        "workspace.providers.platform.dev/sealed unchanged\n"
    );
    let third = get(plane, "org-a", "sealed")?;
    assert_eq!(
        second["metadata"]["resourceVersion"],
        third["metadata"]["resourceVersion"]
    );

    // The plan verifies against the key the webhook published.
    let alice = plane.kubeconfig(User::Alice);
    let verified = plugin::run(alice, &["plan", "sealed", "--verify"])?;
    let line = verified
        .ok()?
        .lines()
        .find(|l| l.starts_with("Verified:"))
        .unwrap_or_default();
    assert!(
        line.ends_with(&format!(
            " yes: signed by published key {}, sealed for this Workspace, values as sealed",
            webhook.key_id
        )),
        "{}",
        verified.stdout
    );
    let status = plugin::run(alice, &["status", "sealed"])?;
    assert!(
        status.ok()?.lines().any(|l| l == "Phase:      Sealed"),
        "{}",
        status.stdout
    );
    Ok(())
}

#[test]
fn a_server_dry_run_shows_the_plan_and_creates_nothing() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    let out = install_as_alice(plane, "dry", &["--version", "6.4.0", "--dry-run=server"])?;
    assert_eq!(
        out,
        "workspace.providers.platform.dev/dry created (server dry run)\n\
         would run attempt 1: podinfo 6.4.0 as release podinfo in namespace podinfo on edge edge-1\n"
    );
    let missing = kubectl::run(
        plane.kubeconfig(User::Admin),
        &[
            "get",
            "workspace.providers.platform.dev",
            "dry",
            "-n",
            "org-a",
        ],
    )?;
    assert!(
        !missing.status.success(),
        "the dry run created the Workspace"
    );
    Ok(())
}

#[test]
fn an_edge_without_install_permission_is_refused_in_the_webhook_s_words() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    let run = plugin::run(
        plane.kubeconfig(User::Alice),
        &["install", "nope", "--recipe", "podinfo", "--edge", "edge-3"],
    )?;
    assert_eq!(
        run.failed()?,
        "error: spec.edge: user \"alice\" may not install onto edge \"edge-3\"; \
         ask the platform team for the `install` verb on edges/edge-3\n"
    );
    assert_eq!(run.stdout, "");
    Ok(())
}

#[test]
fn unknown_recipes_and_values_outside_the_schema_are_refused() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    let alice = plane.kubeconfig(User::Alice);
    let unknown = plugin::run(
        alice,
        &[
            "install", "unknown", "--recipe", "nosuch", "--edge", "edge-1",
        ],
    )?;
    assert_eq!(
        unknown.failed()?,
        "error: spec.recipe: recipe \"nosuch\" does not exist; `kubectl provider recipes` lists the recipes you can install\n"
    );
    for (set, field) in [
        ("replicaCount=99", "replicaCount"),
        ("tier=huge", "tier"),
        ("image.repository=evil/registry", "spec.values.image:"),
    ] {
        let run = plugin::run(
            alice,
            &[
                "install", "outside", "--recipe", "podinfo", "--edge", "edge-1", "--set", set,
            ],
        )?;
        let stderr = run.failed()?;
        assert_one_error_line(stderr);
        assert!(stderr.contains(field), "{set}: {stderr}");
    }
    Ok(())
}

#[test]
fn values_are_pinned_while_the_attempt_is_active() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    install_as_alice(plane, "pinned", &["--set", "replicaCount=2"])?;
    let run = plugin::run(
        plane.kubeconfig(User::Alice),
        &["set", "pinned", "--set", "replicaCount=3"],
    )?;
    let stderr = run.failed()?;
    assert_one_error_line(stderr);
    assert!(
        stderr.contains("spec.values") && stderr.contains("cannot change while attempt"),
        "{stderr}"
    );
    assert_eq!(
        get(plane, "org-a", "pinned")?["spec"]["values"],
        json!({"replicaCount": 2})
    );
    Ok(())
}

#[test]
fn retry_after_a_failure_seals_the_next_attempt() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    let alice = plane.kubeconfig(User::Alice);
    install_as_alice(plane, "again", &["--set", "replicaCount=2"])?;
    let refused = plugin::run(alice, &["retry", "again"])?;
    assert!(
        refused
            .failed()?
            .starts_with("error: attempt 1 of again has no result yet (Sealed)"),
        "{refused:?}"
    );

    finish(plane, "again", "Failed")?;
    let run = plugin::run(alice, &["retry", "again"])?;
    assert_eq!(
        run.ok()?,
        "workspace.providers.platform.dev/again retried (attempt 2 sealed)\n"
    );
    let ws = get(plane, "org-a", "again")?;
    assert_eq!(ws["spec"]["plan"]["attempt"], 2);
    assert_eq!(ws["spec"]["plan"]["retry"], 1);
    // The retry runs the original pinned values.
    assert_eq!(plan_values(plane, &ws["spec"]["plan"])?["replicaCount"], 2);

    // Attempt 2 has no result yet: a second retry is refused, not counted twice.
    let twice = plugin::run(alice, &["retry", "again"])?;
    assert!(
        twice
            .failed()?
            .starts_with("error: attempt 2 of again has no result yet (Sealed)"),
        "{twice:?}"
    );
    Ok(())
}

#[test]
fn set_after_a_success_seals_an_upgrade() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    install_as_alice(plane, "upgrade", &["--set", "replicaCount=2"])?;
    finish(plane, "upgrade", "Succeeded")?;
    let run = plugin::run(
        plane.kubeconfig(User::Alice),
        &[
            "set",
            "upgrade",
            "--set",
            "replicaCount=3",
            "--version",
            "6.4.0",
        ],
    )?;
    assert_eq!(
        run.ok()?,
        "workspace.providers.platform.dev/upgrade configured\n"
    );
    let plan = get(plane, "org-a", "upgrade")?["spec"]["plan"].clone();
    assert_eq!(plan["attempt"], 2);
    assert_eq!(plan["version"], "6.4.0");
    assert_eq!(plan_values(plane, &plan)?["replicaCount"], 3);
    Ok(())
}

#[test]
fn install_wait_ends_when_the_installer_reports_success() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    let mut command = plugin::command(&[
        "install",
        "waited",
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
    wait_for(plane, "org-a", "waited")?;
    finish(plane, "waited", "Succeeded")?;
    let out = child.wait_with_output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout,
        "workspace.providers.platform.dev/waited created\n\
         workspace.providers.platform.dev/waited is ready: attempt 1 succeeded\n"
    );
    Ok(())
}
