//! Pinned values, set, retry.

use super::*;

#[test]
fn values_are_pinned_while_an_attempt_runs() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    plugin::run(
        alice,
        &[
            "install",
            "pinned",
            "--recipe",
            "podinfo",
            "--edge",
            "edge-1",
            "--set",
            "replicaCount=2",
        ],
    )?
    .ok()?;
    seal(plane, "org-a", "pinned", 1, PUBLISHED)?;
    write_status(plane, "org-a", "pinned", running("pinned", 1))?;

    let set = plugin::run(alice, &["set", "pinned", "--set", "replicaCount=3"])?;
    let stderr = set.failed()?;
    assert_one_error_line(stderr);
    // The API server's own words (its CEL rule), on one line.
    assert!(
        stderr.starts_with(
            "error: Workspace.providers.platform.dev \"pinned\" is invalid: spec.values: Forbidden:"
        ) && stderr.contains("is active"),
        "{stderr}"
    );
    assert_eq!(
        get(plane, "org-a", "pinned")?["spec"]["values"],
        json!({"replicaCount": 2})
    );

    let retry = plugin::run(alice, &["retry", "pinned"])?;
    assert_eq!(
        retry.failed()?,
        "error: attempt 1 of pinned has no result yet (Progressing): only a failed attempt can be retried\n\
         hint: wait for its result: kubectl provider status pinned --wait\n"
    );
    Ok(())
}

#[test]
fn set_after_a_success_changes_values_from_the_live_ones() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    plugin::run(
        alice,
        &[
            "install",
            "upgrade",
            "--recipe",
            "podinfo",
            "--edge",
            "edge-1",
            "--set",
            "replicaCount=2,ui.message=hi",
        ],
    )?
    .ok()?;
    seal(plane, "org-a", "upgrade", 1, PUBLISHED)?;
    write_status(plane, "org-a", "upgrade", succeeded("upgrade", 1))?;

    let run = plugin::run(
        alice,
        &[
            "set",
            "upgrade",
            "--set",
            "replicaCount=3",
            "--set",
            "ui.message=null",
        ],
    )?;
    assert_eq!(
        run.ok()?,
        "workspace.providers.platform.dev/upgrade configured\n"
    );
    let ws = get(plane, "org-a", "upgrade")?;
    assert_eq!(ws["spec"]["values"], json!({"replicaCount": 3}));
    // The plan the webhook (here: the test) wrote is not the plugin's to remove.
    assert_eq!(ws["spec"]["plan"]["attempt"], 1);
    let again = plugin::run(alice, &["set", "upgrade", "--set", "replicaCount=3"])?;
    assert_eq!(
        again.ok()?,
        "workspace.providers.platform.dev/upgrade unchanged\n"
    );
    let nothing = plugin::run(alice, &["set", "upgrade"])?;
    assert!(
        nothing
            .failed()?
            .starts_with("error: set needs something to change"),
        "{nothing:?}"
    );
    Ok(())
}

#[test]
fn retry_raises_the_counter_only_after_a_failure() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    plugin::run(
        alice,
        &[
            "install", "flaky", "--recipe", "podinfo", "--edge", "edge-1",
        ],
    )?
    .ok()?;
    seal(plane, "org-a", "flaky", 1, PUBLISHED)?;
    write_status(plane, "org-a", "flaky", failed("flaky", 1))?;

    let run = plugin::run(alice, &["retry", "flaky"])?;
    assert_eq!(
        run.ok()?,
        "workspace.providers.platform.dev/flaky retry requested (spec.retry=1)\n"
    );
    let ws = get(plane, "org-a", "flaky")?;
    assert_eq!(ws["spec"]["retry"], 1);
    // The intent the plugin declared stays whole.
    assert_eq!(ws["spec"]["recipe"], "podinfo");

    // The installer ran attempt 2 and it succeeded: nothing to retry.
    seal(plane, "org-a", "flaky", 2, PUBLISHED)?;
    write_status(plane, "org-a", "flaky", succeeded("flaky", 2))?;
    let refused = plugin::run(alice, &["retry", "flaky"])?;
    assert_eq!(
        refused.failed()?,
        "error: attempt 2 of flaky succeeded: there is nothing to retry\n\
         hint: to change it, set new values: kubectl provider set flaky --set PATH=VALUE\n"
    );
    // An install of the same intent after the retry keeps the counter.
    plugin::run(
        alice,
        &[
            "install", "flaky", "--recipe", "podinfo", "--edge", "edge-1",
        ],
    )?
    .ok()?;
    assert_eq!(get(plane, "org-a", "flaky")?["spec"]["retry"], 1);
    Ok(())
}
