//! The installer's own identity, as shipped (manifests/controller/), tried with the real
//! kubectl against the real API server: it mints tokens only for the provider credentials
//! it makes, only in onboarded organizations, binds only the Roles Recipes may declare,
//! reads only the edges' kubeconfig Secrets, by name — and loses its rights in an organization that
//! is removed.

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use anyhow::{Context, ensure};
use providers_tests::{ControlPlaneInfo, User, installer, kubectl, platform, plugin, supervised};

struct Fixture {
    plane: &'static ControlPlaneInfo,
    /// A kubeconfig acting as `system:serviceaccount:providers-system:providers-controller`.
    installer: PathBuf,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
        platform::install(plane).expect("install");
        let dir = tempfile::tempdir().expect("dir");
        let installer = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    tokio::runtime::Runtime::new()
                        .expect("runtime")
                        .block_on(installer::controller_kubeconfig(plane, dir.path()))
                })
                .join()
        })
        .expect("thread")
        .expect("the installer's kubeconfig");
        let admin = plane.kubeconfig(User::Admin);
        for (kind, args) in [
            (
                "a Role a Recipe may declare",
                "role provider-runtime-demo --verb=get --resource=configmaps -n org-a",
            ),
            (
                "a broad Role of the organization",
                "role org-admin --verb=* --resource=* -n org-a",
            ),
            (
                "an account the installer did not make",
                "serviceaccount builder -n org-a",
            ),
        ] {
            let args: Vec<&str> = std::iter::once("create").chain(args.split(' ')).collect();
            kubectl::ok(admin, &args).unwrap_or_else(|e| panic!("{kind}: {e}"));
        }
        kubectl::ok(admin, &["create", "namespace", "not-an-org"]).expect("namespace");
        // The confinement policy reaches admission through an informer: wait until it
        // answers, so no check below passes for want of it.
        let probe = ["-n", "org-a", "create", "token", "builder"];
        let in_force = (0..50).any(|_| {
            let out = kubectl::run(&installer, &probe).expect("kubectl runs");
            let enforced =
                String::from_utf8_lossy(&out.stderr).contains("providers-installer-confinement");
            if !enforced {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            enforced
        });
        assert!(in_force, "the confinement policy never took effect");
        Fixture {
            plane,
            installer,
            _dir: dir,
        }
    })
}

/// Runs kubectl as the installer; `Ok(stdout)` or `Err(stderr)`.
fn as_installer(args: &str) -> Result<String, String> {
    let args: Vec<&str> = args.split(' ').collect();
    let out = kubectl::run(&fixture().installer, &args).expect("kubectl runs");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn refused(args: &str, because: &str) -> anyhow::Result<()> {
    match as_installer(args) {
        Ok(out) => anyhow::bail!("`kubectl {args}` as the installer was allowed: {out}"),
        Err(error) => {
            ensure!(
                error.contains("Forbidden") || error.contains("forbidden"),
                "`kubectl {args}`: {error}"
            );
            ensure!(error.contains(because), "`kubectl {args}`: {error}");
            Ok(())
        }
    }
}

/// The installer's identity allows no escalation: the escalations the shipped identity once
/// allowed.
#[test]
fn the_installer_cannot_mint_tokens_or_bind_roles_outside_what_it_makes() -> anyhow::Result<()> {
    fixture();
    refused(
        "-n kube-system create token default",
        "cannot create resource",
    )?;
    refused(
        "-n kube-system create rolebinding seize --role system:controller:bootstrap-signer --serviceaccount kube-system:default",
        "cannot create resource",
    )?;
    // In an organization it serves: only its own credentials...
    refused(
        "-n org-a create token builder",
        "handles only what it makes for providers",
    )?;
    refused(
        "-n org-a create serviceaccount builder-2",
        "handles only what it makes for providers",
    )?;
    as_installer("-n org-a create serviceaccount provider-identity-check")
        .map_err(anyhow::Error::msg)?;
    as_installer("-n org-a create token provider-identity-check").map_err(anyhow::Error::msg)?;
    // ...bound only to a Role a Recipe may declare, never to a broader one.
    refused(
        "-n org-a create rolebinding provider-identity-check --role org-admin --serviceaccount org-a:provider-identity-check",
        "only to a Role named provider-runtime",
    )?;
    refused(
        "-n org-a create rolebinding provider-identity-check --clusterrole cluster-admin --serviceaccount org-a:provider-identity-check",
        "",
    )?;
    refused(
        "-n org-a create rolebinding provider-identity-check --role provider-runtime-demo --serviceaccount org-a:builder",
        "binds only a provider's own ServiceAccount",
    )?;
    as_installer(
        "-n org-a create rolebinding provider-identity-check --role provider-runtime-demo --serviceaccount org-a:provider-identity-check",
    )
    .map_err(anyhow::Error::msg)?;
    // Nowhere that is not an onboarded organization.
    refused(
        "-n not-an-org create serviceaccount provider-x",
        "cannot create resource",
    )?;
    Ok(())
}

/// The installer reads Secrets only where and as it must: Secrets only in the edge
/// credentials namespace, and there only by name: never the sealing key or the webhook's
/// serving key in the platform namespace.
#[test]
fn the_installer_reads_only_edge_credentials_by_name() -> anyhow::Result<()> {
    fixture();
    for namespace in ["kube-system", "org-a", "default", "providers-system"] {
        refused(
            &format!("-n {namespace} get secrets"),
            "cannot list resource",
        )?;
    }
    refused(
        "-n providers-system get secret providers-sealing-key",
        "cannot get resource",
    )?;
    refused("-n providers-edges get secrets", "cannot list resource")?;
    kubectl::ok(
        fixture().plane.kubeconfig(User::Admin),
        &[
            "-n",
            "providers-edges",
            "create",
            "secret",
            "generic",
            "edge-identity-check",
            "--from-literal=kubeconfig=x",
        ],
    )?;
    as_installer("-n providers-edges get secret edge-identity-check")
        .map_err(anyhow::Error::msg)?;
    Ok(())
}

/// An organization's installer rights come and go with its onboarding: onboarding is one
/// step, printable for GitOps; removing the organization takes the installer's rights with
/// it.
#[test]
fn onboarding_gives_the_installer_its_rights_and_removing_takes_them() -> anyhow::Result<()> {
    let Fixture { plane, .. } = fixture();
    let platform_admin = plane.kubeconfig(User::PlatformAdmin);
    let printed = plugin::run(
        platform_admin,
        &[
            "org",
            "add",
            "org-z",
            "--group",
            "org-z-engineers",
            "--dry-run",
            "-o",
            "yaml",
        ],
    )?;
    let yaml = printed.ok()?;
    for expected in [
        "kind: Namespace",
        "providers.platform.dev/organization: 'true'",
        "name: providers-tenants",
        "name: providers-installer-organization",
        "name: org-z-engineers",
    ] {
        ensure!(yaml.contains(expected), "{expected} missing:\n{yaml}");
    }
    refused("-n org-z create serviceaccount provider-z", "")
        .context("nothing exists before it is applied")?;

    // Rights for an account that is not the installer as installed are refused: that
    // account would hold them outside the installer's confinement policy.
    let elsewhere = plugin::run(
        platform_admin,
        &[
            "org",
            "add",
            "org-z",
            "--group",
            "org-z-engineers",
            "--installer-namespace",
            "elsewhere",
        ],
    )?;
    ensure!(
        elsewhere.code != 0
            && elsewhere
                .stderr
                .contains("the installer runs as providers-system/providers-controller, not elsewhere/providers-controller"),
        "{elsewhere:?}"
    );
    refused("-n org-z create serviceaccount provider-z", "")
        .context("nothing was applied for the wrong account")?;

    plugin::run(
        platform_admin,
        &["org", "add", "org-z", "--group", "org-z-engineers"],
    )?
    .ok()?;
    as_installer("-n org-z create serviceaccount provider-z").map_err(anyhow::Error::msg)?;
    as_installer("-n org-z create token provider-z").map_err(anyhow::Error::msg)?;
    let listed = plugin::run(platform_admin, &["org", "list"])?;
    ensure!(
        listed
            .ok()?
            .lines()
            .any(|l| l.starts_with("org-z") && l.ends_with("bound")),
        "{listed:?}"
    );

    plugin::run(platform_admin, &["org", "remove", "org-z"])?.ok()?;
    refused("-n org-z create token provider-z", "cannot create resource")?;
    let label = kubectl::ok(
        platform_admin,
        &[
            "get",
            "namespace",
            "org-z",
            "-o",
            "jsonpath={.metadata.labels}",
        ],
    )?;
    ensure!(
        !label.contains("providers.platform.dev/organization"),
        "{label}"
    );
    Ok(())
}
