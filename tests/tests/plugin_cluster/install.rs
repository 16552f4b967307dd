//! Install: server-side apply with field manager kubectl-provider.

use super::*;

#[test]
fn install_twice_changes_nothing() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    let args = [
        "install",
        "idem",
        "--recipe",
        "podinfo",
        "--edge",
        "edge-1",
        "--set",
        "replicaCount=2",
        "--set",
        "ui.message=hello",
    ];
    assert_eq!(
        plugin::run(alice, &args)?.ok()?,
        "workspace.providers.platform.dev/idem created\n"
    );
    let first = get(plane, "org-a", "idem")?;
    assert_eq!(
        plugin::run(alice, &args)?.ok()?,
        "workspace.providers.platform.dev/idem unchanged\n"
    );
    let second = get(plane, "org-a", "idem")?;
    assert_eq!(
        first["metadata"]["generation"],
        second["metadata"]["generation"]
    );
    assert_eq!(
        first["spec"], second["spec"],
        "the same plan, the same attempt"
    );
    // No installer runs here: the first write after creation stores the status default
    // every read already showed (ADR 23); from then on nothing is stored at all.
    assert_eq!(
        plugin::run(alice, &args)?.ok()?,
        "workspace.providers.platform.dev/idem unchanged\n"
    );
    let third = get(plane, "org-a", "idem")?;
    assert_eq!(
        second["metadata"]["resourceVersion"],
        third["metadata"]["resourceVersion"]
    );
    assert_eq!(
        second["spec"],
        json!({"recipe": "podinfo", "edge": "edge-1", "values": {"replicaCount": 2, "ui": {"message": "hello"}}})
    );
    let managers: Vec<(String, String)> = second["metadata"]["managedFields"]
        .as_array()
        .context("managedFields")?
        .iter()
        .map(|m| {
            (
                m["manager"].as_str().unwrap_or_default().to_owned(),
                m["operation"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        managers,
        [("kubectl-provider".to_owned(), "Apply".to_owned())]
    );
    // Different arguments are a declared change: the plugin applies them.
    let changed = &args[..8];
    assert_eq!(
        plugin::run(alice, changed)?.ok()?,
        "workspace.providers.platform.dev/idem configured\n"
    );
    assert_eq!(
        get(plane, "org-a", "idem")?["spec"]["values"],
        json!({"replicaCount": 2})
    );
    Ok(())
}

#[test]
fn a_server_dry_run_creates_nothing() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    let run = plugin::run(
        alice,
        &[
            "install",
            "dry",
            "--recipe",
            "podinfo",
            "--edge",
            "edge-1",
            "--dry-run=server",
        ],
    )?;
    assert_eq!(
        run.ok()?,
        "workspace.providers.platform.dev/dry created (server dry run)\n"
    );
    let yaml = plugin::run(
        alice,
        &[
            "install",
            "dry",
            "--recipe",
            "podinfo",
            "--edge",
            "edge-1",
            "--dry-run",
            "-o",
            "yaml",
        ],
    )?;
    let object: Value = serde_norway::from_str(yaml.ok()?)?;
    assert_eq!(object["spec"]["recipe"], "podinfo");
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
fn install_takes_values_from_files_then_set_then_set_string() -> anyhow::Result<()> {
    let plane = plane();
    let file = tempfile::Builder::new().suffix(".yaml").tempfile()?;
    std::fs::write(
        file.path(),
        "replicaCount: 4\nui:\n  message: from-file\n  color: \"#000000\"\n",
    )?;
    let run = plugin::run(
        plane.kubeconfig(User::Alice),
        &[
            "install",
            "vals",
            "--recipe",
            "podinfo",
            "--edge",
            "edge-1",
            "--version",
            "6.4.0",
            "-f",
            &file.path().display().to_string(),
            "--set",
            "ui.message=from-set,tier=small",
            "--set-string",
            "ui.color=123456",
            "-o",
            "json",
        ],
    )?;
    let object: Value = serde_json::from_str(run.ok()?)?;
    assert_eq!(
        object["spec"],
        json!({"recipe": "podinfo", "edge": "edge-1", "version": "6.4.0",
               "values": {"replicaCount": 4, "tier": "small", "ui": {"message": "from-set", "color": "123456"}}})
    );
    Ok(())
}

#[test]
fn the_platform_admin_installs_into_a_tenant_namespace() -> anyhow::Result<()> {
    let plane = plane();
    let run = plugin::run(
        plane.kubeconfig(User::PlatformAdmin),
        &[
            "install", "by-admin", "-n", "org-a", "--recipe", "redis", "--edge", "edge-3", "-o",
            "name",
        ],
    )?;
    assert_eq!(run.ok()?, "workspace.providers.platform.dev/by-admin\n");
    // And alice sees it in her namespace, by default, without -n.
    let status = plugin::run(plane.kubeconfig(User::Alice), &["status", "by-admin"])?;
    assert!(
        status.ok()?.contains("Phase:      Unsealed"),
        "{}",
        status.stdout
    );
    Ok(())
}

#[test]
fn a_tenant_cannot_write_in_another_organization() -> anyhow::Result<()> {
    let plane = plane();
    let run = plugin::run(
        plane.kubeconfig(User::Bob),
        &[
            "install", "intruder", "-n", "org-a", "--recipe", "podinfo", "--edge", "edge-2",
        ],
    )?;
    let stderr = run.failed()?;
    assert_one_error_line(stderr);
    assert!(
        stderr.contains("User \"bob\" cannot") && stderr.contains("in the namespace \"org-a\""),
        "{stderr}"
    );
    Ok(())
}
