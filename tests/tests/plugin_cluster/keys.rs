//! keys: the sealing keys of a namespace's live plans, and the gate for retiring one.

use super::*;

/// A namespace of its own (no other test writes there): `signed` sealed with the published
/// key and running; `old` sealed with a key nobody publishes, succeeded and keeping that
/// plan for a rollback.
fn key_namespace(plane: &ControlPlaneInfo) -> anyhow::Result<&'static str> {
    const NAMESPACE: &str = "key-use";
    let admin = plane.kubeconfig(User::Admin);
    kubectl::ok(admin, &["create", "namespace", NAMESPACE])?;
    for name in ["signed", "old"] {
        plugin::run(
            admin,
            &[
                "install", name, "-n", NAMESPACE, "--recipe", "podinfo", "--edge", "edge-1",
            ],
        )?
        .ok()?;
    }
    seal(plane, NAMESPACE, "signed", 1, PUBLISHED)?;
    write_status(plane, NAMESPACE, "signed", running("signed", 1))?;
    let kept = seal(plane, NAMESPACE, "old", 1, UNKNOWN)?;
    let mut status = succeeded("old", 1);
    status["attempts"][0]["kept"] = json!({ "plan": kept });
    write_status(plane, NAMESPACE, "old", status)?;
    Ok(NAMESPACE)
}

#[test]
fn keys_count_current_and_kept_plans_and_gate_a_key_s_retirement() -> anyhow::Result<()> {
    let plane = plane();
    let namespace = key_namespace(plane)?;
    let admin = plane.kubeconfig(User::PlatformAdmin);
    let (published, unknown) = (
        Sealer::from_seed(PUBLISHED).key_id().to_owned(),
        Sealer::from_seed(UNKNOWN).key_id().to_owned(),
    );
    let mut rows = [
        format!("{published}   1            0      yes"),
        format!("{unknown}   1            1      no"),
    ];
    rows.sort();
    let listed = plugin::run(admin, &["keys", "-n", namespace])?;
    assert_eq!(
        listed.ok()?,
        format!(
            "KEY ID             WORKSPACES   KEPT   PUBLISHED\n{}\n",
            rows.join("\n")
        )
    );
    assert_eq!(listed.stderr, "");

    // The unpublished key still seals a current and a kept plan: the gate is closed.
    let gate = plugin::run(admin, &["keys", "-n", namespace, "--in-use", &unknown])?;
    let said = gate.failed()?;
    assert_one_error_line(said);
    assert!(
        said.starts_with(&format!(
            "error: key {unknown} still seals 2 live plans in namespace {namespace} \
             (1 current Succeeded, 1 kept for rollback): do not retire it yet\nhint: "
        )),
        "{said}"
    );
    assert_eq!(
        gate.stdout,
        "NAME   ATTEMPT   PLAN      PHASE\nold    1         current   Succeeded\nold    1         kept      Succeeded\n"
    );
    let json = plugin::run(
        admin,
        &[
            "keys", "-n", namespace, "--in-use", &published, "-o", "json",
        ],
    )?;
    json.failed()?;
    let data: Value = serde_json::from_str(&json.stdout)?;
    assert_eq!(
        data,
        json!({"keyID": published, "published": true, "plans": [
            {"namespace": namespace, "name": "signed", "attempt": 1, "plan": "current", "phase": "Progressing"}
        ]})
    );

    // A key no plan here uses: the gate opens, saying only this namespace was read.
    let unused = plugin::run(
        admin,
        &["keys", "-n", namespace, "--in-use", "00000000000000FF"],
    )?;
    assert_eq!(unused.ok()?, "");
    assert_eq!(
        unused.stderr,
        format!(
            "No live plan in namespace {namespace} is sealed with key 00000000000000ff. Only \
             namespace {namespace} was read: run with -A before retiring the key. It is not \
             published either: check the ID (kubectl provider keys -A lists them).\n"
        )
    );

    // A ConfigMap that cannot be read: PUBLISHED is unknown, and a warning says why.
    let elsewhere = plugin::run(
        admin,
        &["keys", "-n", namespace, "--keys-configmap", "no-such-keys"],
    )?;
    assert!(
        elsewhere
            .ok()?
            .contains(&format!("{unknown}   1            1      unknown")),
        "{}",
        elsewhere.stdout
    );
    assert!(
        elsewhere.stderr.starts_with(
            "warning: whether a key is published is unknown: configmap providers-system/no-such-keys does not exist"
        ),
        "{}",
        elsewhere.stderr
    );

    // Not a key ID: a usage error.
    let typo = plugin::run(admin, &["keys", "--in-use", "sealing.pub"])?;
    assert_eq!(typo.code, 2, "{}", typo.stderr);
    assert!(
        typo.stderr.contains("is not a sealing key ID"),
        "{}",
        typo.stderr
    );
    Ok(())
}
