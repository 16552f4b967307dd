//! `kubectl provider` without a cluster: help with examples, version, shell completion,
//! usage errors and the krew manifest, through the real kubectl.

use std::process::Command;

use providers_tests::{binaries, plugin};

const SUBCOMMANDS: [&str; 13] = [
    "recipes",
    "edges",
    "install",
    "status",
    "plan",
    "set",
    "retry",
    "history",
    "target",
    "delete",
    "keys",
    "completion",
    "version",
];

#[test]
fn kubectl_finds_the_plugin_and_its_help_lists_every_subcommand() -> anyhow::Result<()> {
    let run = plugin::run_offline(&["--help"])?;
    let help = run.ok()?;
    assert!(help.contains("Usage: kubectl provider"), "{help}");
    for sub in SUBCOMMANDS {
        assert!(
            help.contains(&format!("  {sub} ")),
            "{sub} missing:\n{help}"
        );
    }
    assert!(help.contains("Examples:"), "{help}");
    Ok(())
}

#[test]
fn every_subcommand_has_help_with_examples() -> anyhow::Result<()> {
    for sub in SUBCOMMANDS {
        let run = plugin::run_offline(&[sub, "--help"])?;
        let help = run.ok()?;
        assert!(help.contains("Examples:"), "{sub}:\n{help}");
        assert!(
            help.contains(&format!("kubectl provider {sub}"))
                || help.contains(&format!("kubectl-provider {sub}")),
            "{sub} shows no example of itself:\n{help}"
        );
        for flag in [
            "--kubeconfig",
            "--context",
            "--namespace",
            "--as",
            "--output",
        ] {
            assert!(help.contains(flag), "{sub} lacks {flag}:\n{help}");
        }
    }
    Ok(())
}

#[test]
fn version_prints_in_each_format() -> anyhow::Result<()> {
    let version = env!("CARGO_PKG_VERSION");
    let table = plugin::run_offline(&["version"])?;
    assert_eq!(
        table.ok()?,
        format!("kubectl-provider v{version} (API providers.platform.dev/v1alpha1)\n")
    );
    let json: serde_json::Value =
        serde_json::from_str(plugin::run_offline(&["version", "-o", "json"])?.ok()?)?;
    assert_eq!(json["clientVersion"]["version"], format!("v{version}"));
    let yaml: serde_json::Value =
        serde_norway::from_str(plugin::run_offline(&["version", "-o", "yaml"])?.ok()?)?;
    assert_eq!(yaml, json);
    Ok(())
}

#[test]
fn bash_completion_is_a_valid_script() -> anyhow::Result<()> {
    let run = plugin::run_offline(&["completion", "bash"])?;
    let script = run.ok()?;
    assert!(script.contains("kubectl-provider"), "{script}");
    for sub in ["install", "retry", "completion"] {
        assert!(script.contains(sub), "{sub} is not completed");
    }
    // bash -n parses the script without running it.
    let file = tempfile::Builder::new().suffix(".bash").tempfile()?;
    std::fs::write(file.path(), script)?;
    let check = Command::new("bash").arg("-n").arg(file.path()).output()?;
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    Ok(())
}

#[test]
fn zsh_and_fish_completion_are_generated() -> anyhow::Result<()> {
    let zsh = plugin::run_offline(&["completion", "zsh"])?;
    assert!(
        zsh.ok()?.starts_with("#compdef kubectl-provider"),
        "{}",
        zsh.stdout
    );
    let fish = plugin::run_offline(&["completion", "fish"])?;
    assert!(
        fish.ok()?.contains("complete -c kubectl-provider"),
        "{}",
        fish.stdout
    );
    let bad = plugin::run_offline(&["completion", "powershell-7"])?;
    assert_eq!(bad.code, 2, "{bad:?}");
    Ok(())
}

#[test]
fn usage_errors_exit_2_and_say_what_is_wrong() -> anyhow::Result<()> {
    let missing = plugin::run_offline(&["install", "web", "--edge", "edge-1"])?;
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(missing.stderr.contains("--recipe"), "{}", missing.stderr);

    let client = plugin::run_offline(&[
        "install",
        "web",
        "--recipe",
        "r",
        "--edge",
        "e",
        "--dry-run=client",
    ])?;
    assert_eq!(client.code, 2, "{client:?}");
    assert!(client.stderr.contains("server"), "{}", client.stderr);

    let format = plugin::run_offline(&["recipes", "-o", "xml"])?;
    assert_eq!(format.code, 2, "{format:?}");
    assert!(
        format.stderr.contains("table, wide, yaml, json, name"),
        "{}",
        format.stderr
    );
    Ok(())
}

#[test]
fn a_missing_kubeconfig_is_named() -> anyhow::Result<()> {
    let run = plugin::run_offline(&[
        "install",
        "web",
        "--recipe",
        "r",
        "--edge",
        "e",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
    ])?;
    assert!(
        run.failed()?
            .contains("cannot read kubeconfig /nonexistent/kubeconfig"),
        "{run:?}"
    );
    Ok(())
}

#[test]
fn group_impersonation_needs_a_user() -> anyhow::Result<()> {
    let run = plugin::run_offline(&["recipes", "--as-group", "tenants"])?;
    assert_eq!(
        run.failed()?,
        "error: --as-group needs --as: the API server impersonates groups only together with a user\nhint: add --as USER\n"
    );
    Ok(())
}

#[test]
fn the_krew_manifest_describes_this_plugin() -> anyhow::Result<()> {
    let path = binaries::workspace_root()?.join("plugin/krew/provider.yaml");
    let manifest: serde_json::Value = serde_norway::from_str(&std::fs::read_to_string(path)?)?;
    assert_eq!(manifest["kind"], "Plugin");
    assert_eq!(
        manifest["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(manifest["metadata"]["name"], "provider");
    assert_eq!(
        manifest["spec"]["version"],
        format!("v{}", env!("CARGO_PKG_VERSION"))
    );
    let platforms = manifest["spec"]["platforms"].as_array().expect("platforms");
    assert!(!platforms.is_empty());
    for platform in platforms {
        assert_eq!(platform["bin"], "kubectl-provider");
        let sha = platform["sha256"].as_str().expect("sha256");
        assert_eq!(sha.len(), 64);
        assert!(sha.chars().all(|c| c.is_ascii_hexdigit()));
        let uri = platform["uri"].as_str().expect("uri");
        assert!(
            uri.starts_with("https://") && uri.ends_with(".tar.gz"),
            "{uri}"
        );
    }
    Ok(())
}
