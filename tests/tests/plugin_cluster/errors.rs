//! Delete, errors, kubeconfig handling.

use super::*;

#[test]
fn delete_says_what_stays_on_the_edge() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    plugin::run(
        alice,
        &["install", "gone", "--recipe", "podinfo", "--edge", "edge-1"],
    )?
    .ok()?;
    seal(plane, "org-a", "gone", 1, PUBLISHED)?;
    write_status(plane, "org-a", "gone", succeeded("gone", 1))?;
    let run = plugin::run(alice, &["delete", "gone", "--wait", "--timeout", "30s"])?;
    assert_eq!(
        run.ok()?,
        "workspace.providers.platform.dev/gone deleted\n\
         \x20 Left in place on edge edge-1 (cluster cluster-edge-1): Helm release podinfo in namespace podinfo, the namespace and its volumes (PVCs).\n\
         \x20 Also left: the provider's hub credential (Secret gone-hub-kubeconfig in namespace podinfo), for a later registration.\n\
         \x20 Removed: attempt 1's runner identity. No new attempt starts. To remove the release itself, run helm uninstall podinfo -n podinfo on the edge.\n\
         workspace.providers.platform.dev/gone is gone\n"
    );
    assert!(get(plane, "org-a", "gone").is_err());
    let again = plugin::run(alice, &["delete", "gone"])?;
    assert_eq!(
        again.failed()?,
        "error: workspace \"gone\" not found in namespace org-a\nhint: list them with: kubectl provider status\n"
    );
    Ok(())
}

#[test]
fn an_unreachable_api_server_is_one_clear_line() -> anyhow::Result<()> {
    let plane = plane();
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("closed.kubeconfig");
    // Port 1 on 127.0.0.1: nothing listens there.
    providers_tests::kubeconfig::write(
        &kubeconfig,
        "closed",
        "https://127.0.0.1:1",
        &plane.ca_pem()?,
        "alice",
        "token",
        Some("org-a"),
    )?;
    let run = plugin::run(&kubeconfig, &["status"])?;
    let stderr = run.failed()?;
    assert_one_error_line(stderr);
    assert!(
        stderr
            .starts_with("error: cannot reach the Kubernetes API server at https://127.0.0.1:1: "),
        "{stderr}"
    );
    Ok(())
}

#[test]
fn context_and_kubeconfig_env_choose_the_user() -> anyhow::Result<()> {
    let plane = plane();
    // One kubeconfig with alice's and bob's contexts; alice's is current.
    let read = |user: User| -> anyhow::Result<Value> {
        Ok(serde_norway::from_str(&std::fs::read_to_string(
            plane.kubeconfig(user),
        )?)?)
    };
    let (mut merged, bob) = (read(User::Alice)?, read(User::Bob)?);
    for key in ["users", "contexts"] {
        let extra = bob[key].as_array().context("list")?.clone();
        merged[key].as_array_mut().context("list")?.extend(extra);
    }
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("both.kubeconfig");
    std::fs::write(&path, serde_norway::to_string(&merged)?)?;

    let bob_context = bob["current-context"].as_str().context("context")?;
    let as_bob = plugin::run(&path, &["edges", "--context", bob_context])?;
    plugin::check_snapshot("edges_bob", as_bob.ok()?)?;

    // KUBECONFIG in the environment, no flag: alice, in her context's namespace.
    let mut command = plugin::command(&["status", "by-env-missing"])?;
    command.env("KUBECONFIG", &path);
    let run = plugin::collect(command)?;
    assert_eq!(
        run.failed()?,
        "error: workspace \"by-env-missing\" not found in namespace org-a\nhint: list them with: kubectl provider status\n"
    );
    Ok(())
}

#[test]
fn impersonation_acts_with_the_impersonated_user_s_rights() -> anyhow::Result<()> {
    let plane = plane();
    let admin = plane.kubeconfig(User::PlatformAdmin);
    let as_alice = plugin::run(
        admin,
        &[
            "status",
            "-n",
            SHOWCASE,
            "--as",
            "alice",
            "--as-group",
            "tenants",
        ],
    )?;
    assert!(as_alice.ok()?.contains("shown"), "{as_alice:?}");
    let as_bob = plugin::run(
        admin,
        &[
            "status",
            "-n",
            SHOWCASE,
            "--as",
            "bob",
            "--as-group",
            "tenants",
        ],
    )?;
    let stderr = as_bob.failed()?;
    assert_one_error_line(stderr);
    assert!(stderr.contains("User \"bob\" cannot list"), "{stderr}");
    Ok(())
}

#[test]
fn a_terminal_gets_a_spinner_instead_of_lines() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    plugin::run(
        alice,
        &["install", "spun", "--recipe", "podinfo", "--edge", "edge-1"],
    )?
    .ok()?;
    seal(plane, "org-a", "spun", 1, PUBLISHED)?;
    // `script` runs the command on a pseudo-terminal, as a person's shell would.
    let line = format!(
        "PATH='{}' kubectl provider status spun --wait --timeout 2s --kubeconfig '{}'",
        plugin::path_with_plugin()?.to_string_lossy(),
        alice.display()
    );
    let out = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .stdin(Stdio::null())
        .output()?;
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{terminal}");
    assert!(
        terminal.contains("attempt 1 sealed, waiting for the installer"),
        "{terminal}"
    );
    assert!(
        !terminal.contains("waiting: "),
        "plain lines on a terminal: {terminal}"
    );
    assert!(
        terminal.contains("error: timed out after 2s waiting for spun"),
        "{terminal}"
    );
    Ok(())
}

#[test]
fn a_cluster_without_the_crds_says_so() -> anyhow::Result<()> {
    let bare = providers_tests::Supervised::start(
        Path::new(env!("CARGO_BIN_EXE_providers-controlplane")),
        "bare",
    )?;
    let run = plugin::run(bare.info.kubeconfig(User::Admin), &["recipes"])?;
    assert_eq!(
        run.failed()?,
        "error: this cluster does not serve providers.platform.dev/v1alpha1 recipes: the providers CRDs are not installed\n\
         hint: check the kubeconfig context (--context), or ask the platform team\n"
    );
    bare.stop()
}

#[test]
fn fields_another_manager_declares_are_not_taken_over_without_asking() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    // A GitOps tool declared the Workspace first, with its own field manager.
    let manifest = tempfile::Builder::new().suffix(".yaml").tempfile()?;
    std::fs::write(
        manifest.path(),
        "apiVersion: providers.platform.dev/v1alpha1\nkind: Workspace\n\
         metadata: {name: shared, namespace: org-a}\n\
         spec: {recipe: podinfo, edge: edge-1, values: {replicaCount: 2}}\n",
    )?;
    kubectl::ok(
        alice,
        &[
            "apply",
            "--server-side",
            "--field-manager=gitops",
            "-f",
            &manifest.path().display().to_string(),
        ],
    )?;
    // The same intent from the plugin is shared, not a conflict.
    assert_eq!(
        plugin::run(
            alice,
            &[
                "install",
                "shared",
                "--recipe",
                "podinfo",
                "--edge",
                "edge-1",
                "--set",
                "replicaCount=2"
            ],
        )?
        .ok()?,
        "workspace.providers.platform.dev/shared unchanged\n"
    );
    // A different value is a conflict: named, not silently won.
    for args in [
        &[
            "install",
            "shared",
            "--recipe",
            "podinfo",
            "--edge",
            "edge-1",
            "--set",
            "replicaCount=3",
        ][..],
        &["set", "shared", "--set", "replicaCount=3"][..],
    ] {
        let run = plugin::run(alice, args)?;
        assert_eq!(
            run.failed()?,
            "error: Apply failed with 1 conflict: conflict with \"gitops\": .spec.values.replicaCount\n\
             hint: another field manager (for example a GitOps tool) owns these fields: change them \
             where it declares them, or take them over with kubectl provider set NAME ... --force-conflicts\n",
            "{}",
            args.join(" ")
        );
    }
    assert_eq!(
        get(plane, "org-a", "shared")?["spec"]["values"]["replicaCount"],
        2
    );
    // Asked explicitly, set takes the field over.
    let forced = plugin::run(
        alice,
        &[
            "set",
            "shared",
            "--set",
            "replicaCount=3",
            "--force-conflicts",
        ],
    )?;
    assert_eq!(
        forced.ok()?,
        "workspace.providers.platform.dev/shared configured\n"
    );
    assert_eq!(
        get(plane, "org-a", "shared")?["spec"]["values"]["replicaCount"],
        3
    );
    Ok(())
}
