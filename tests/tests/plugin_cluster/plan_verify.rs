//! plan --verify: a tampered or copied plan, an unknown key, an unsealed Workspace.

use super::*;

#[test]
fn plan_verify_fails_on_a_tampered_plan() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    plugin::run(
        alice,
        &[
            "install", "tampered", "--recipe", "podinfo", "--edge", "edge-1",
        ],
    )?
    .ok()?;
    let mut sealed = seal(plane, "org-a", "tampered", 1, PUBLISHED)?;
    let ok = plugin::run(alice, &["plan", "tampered", "--verify"])?;
    assert!(
        ok.ok()?
            .contains("Verified:   yes: signed by published key"),
        "{}",
        ok.stdout
    );

    // Someone with write access (a bypassed webhook) raises the replicas after sealing.
    sealed["values"]["replicaCount"] = json!(5);
    write_plan(plane, "org-a", "tampered", &sealed)?;
    for format in ["table", "json"] {
        let run = plugin::run(alice, &["plan", "tampered", "--verify", "-o", format])?;
        assert_eq!(run.stdout, "", "nothing is shown for an untrusted plan");
        assert_eq!(
            run.failed()?,
            "error: plan verification failed: the plan's signature does not match its contents: \
             it was changed after sealing or not sealed by the webhook\n\
             hint: do not trust this plan; the installer refuses to run it. Ask the platform team\n"
        );
    }
    // Without --verify the plan is shown, as it is.
    let shown = plugin::run(alice, &["plan", "tampered", "-o", "json"])?;
    let plan: Value = serde_json::from_str(shown.ok()?)?;
    assert_eq!(plan["values"]["replicaCount"], 5);
    Ok(())
}

#[test]
fn plan_verify_fails_on_a_copied_plan_and_an_unknown_key() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    for name in ["origin", "copycat", "foreign"] {
        plugin::run(
            alice,
            &["install", name, "--recipe", "podinfo", "--edge", "edge-1"],
        )?
        .ok()?;
    }
    let original = seal(plane, "org-a", "origin", 1, PUBLISHED)?;
    write_plan(plane, "org-a", "copycat", &original)?;
    let copied = plugin::run(alice, &["plan", "copycat", "--verify"])?;
    assert!(
        copied.failed()?.starts_with(
            "error: plan verification failed: the plan was sealed for Workspace org-a/origin, not org-a/copycat"
        ),
        "{copied:?}"
    );

    seal(plane, "org-a", "foreign", 1, UNKNOWN)?;
    let foreign = plugin::run(alice, &["plan", "foreign", "--verify"])?;
    let unknown_id = Sealer::from_seed(UNKNOWN).key_id().to_owned();
    assert!(
        foreign.failed()?.starts_with(&format!(
            "error: plan verification failed: the plan is sealed with key \"{unknown_id}\", which is not among the published keys"
        )),
        "{foreign:?}"
    );

    let missing_keys = plugin::run(
        alice,
        &["plan", "origin", "--verify", "--keys-configmap", "nope"],
    )?;
    assert!(
        missing_keys
            .failed()?
            .starts_with("error: cannot read the published sealing keys (configmap nope in namespace providers-system)"),
        "{missing_keys:?}"
    );
    Ok(())
}

#[test]
fn plan_of_an_unsealed_workspace_says_so() -> anyhow::Result<()> {
    let plane = plane();
    let run = plugin::run(
        plane.kubeconfig(User::Alice),
        &["plan", "fresh", "-n", SHOWCASE],
    )?;
    assert_eq!(
        run.failed()?,
        "error: fresh has no sealed plan yet\n\
         hint: the admission webhook seals it when the Workspace is created; see kubectl provider status\n"
    );
    Ok(())
}
