//! The scripted tenant session: real `kubectl provider` commands, shown as a transcript,
//! each checked for the outcome the story needs.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

use super::System;
use crate::{User, binaries};

/// What a command must do.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Success,
    Refusal,
}

struct Shell {
    path: String,
    hub: ControlPlaneUsers,
    edge_admin: PathBuf,
}

struct ControlPlaneUsers {
    alice: PathBuf,
    bob: PathBuf,
    platform: PathBuf,
}

impl Shell {
    fn new(system: &System) -> anyhow::Result<Self> {
        let plugin_dir = binaries::cargo_bin("kubectl-provider")?
            .parent()
            .context("bin dir")?
            .to_path_buf();
        let helm_dir = binaries::dir()?;
        let path = format!(
            "{}:{}:{}",
            plugin_dir.display(),
            helm_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Ok(Self {
            path,
            hub: ControlPlaneUsers {
                alice: system.hub.kubeconfig(User::Alice).to_path_buf(),
                bob: system.hub.kubeconfig(User::Bob).to_path_buf(),
                platform: system.hub.kubeconfig(User::PlatformAdmin).to_path_buf(),
            },
            edge_admin: system.edge.kubeconfig(User::PlatformAdmin).to_path_buf(),
        })
    }

    /// Runs `program args` with KUBECONFIG set, prints it as a transcript, and checks it.
    fn run(
        &self,
        who: &str,
        kubeconfig: &Path,
        program: &str,
        args: &[&str],
        expect: Expect,
    ) -> anyhow::Result<String> {
        self.run_with(who, kubeconfig, &[], program, args, expect)
    }

    /// [`Shell::run`] with more environment variables (`vars`), shown in the transcript.
    fn run_with(
        &self,
        who: &str,
        kubeconfig: &Path,
        vars: &[(&str, &str)],
        program: &str,
        args: &[&str],
        expect: Expect,
    ) -> anyhow::Result<String> {
        let shown_vars: String = vars
            .iter()
            .map(|(key, value)| format!("{key}={} ", quote(value)))
            .collect();
        println!(
            "\n[{who}] $ {shown_vars}{program} {}",
            args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
        );
        let out = Command::new(program)
            .args(args)
            .envs(vars.iter().copied())
            .env("KUBECONFIG", kubeconfig)
            .env("PATH", &self.path)
            .env(
                "HELM_CACHE_HOME",
                std::env::temp_dir().join("providers-demo-helm"),
            )
            .output()
            .with_context(|| format!("running {program}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Progress goes to stderr as it happens, the result to stdout at the end.
        for line in stderr.lines().chain(stdout.lines()) {
            println!("  {line}");
        }
        match (expect, out.status.success()) {
            (Expect::Success, true) | (Expect::Refusal, false) => Ok(format!("{stdout}{stderr}")),
            (Expect::Success, false) => {
                bail!("`{program} {}` failed; the demo stops here", args.join(" "))
            }
            (Expect::Refusal, true) => {
                bail!("`{program} {}` was expected to be refused", args.join(" "))
            }
        }
    }

    fn bob(&self, args: &[&str], expect: Expect) -> anyhow::Result<String> {
        self.run(
            "bob",
            &self.hub.bob,
            "kubectl",
            &[&["provider"], args].concat(),
            expect,
        )
    }

    fn alice(&self, args: &[&str], expect: Expect) -> anyhow::Result<String> {
        self.run(
            "alice",
            &self.hub.alice,
            "kubectl",
            &[&["provider"], args].concat(),
            expect,
        )
    }
}

fn quote(arg: &str) -> String {
    if arg.contains('\'') {
        format!("\"{arg}\"")
    } else if arg.contains(' ') {
        format!("'{arg}'")
    } else {
        arg.to_owned()
    }
}

fn say(text: &str) {
    println!("\n# {text}");
}

/// Runs the session. Any step that does not do what the story says fails the demo.
pub async fn run(system: &System) -> anyhow::Result<()> {
    let shell = Shell::new(system)?;
    say("alice looks at what she may install, and where");
    shell.alice(&["recipes"], Expect::Success)?;
    shell.alice(&["edges"], Expect::Success)?;

    say("edge-2 is not hers: the webhook asks RBAC about that exact edge and refuses");
    let refused = shell.alice(
        &[
            "install", "greeter", "--recipe", "hello", "--edge", "edge-2",
        ],
        Expect::Refusal,
    )?;
    ensure(&refused, "edge-2")?;

    say("onto edge-1: the webhook seals the plan, the installer runs helm on the edge as a Job");
    shell.alice(
        &[
            "install",
            "greeter",
            "--recipe",
            "hello",
            "--edge",
            "edge-1",
            "--set",
            "greeting=hi from alice",
            "--wait",
            "--timeout",
            "180s",
        ],
        Expect::Success,
    )?;
    shell.alice(&["plan", "greeter", "--verify"], Expect::Success)?;
    shell.alice(&["status", "greeter"], Expect::Success)?;

    say("the release is on the edge, with the pinned values");
    let edge = &shell.edge_admin;
    shell.run(
        "platform",
        edge,
        "helm",
        &["list", "--namespace", "org-a-hello"],
        Expect::Success,
    )?;
    let greeting = shell.run(
        "platform",
        edge,
        "kubectl",
        &[
            "get",
            "configmap",
            "hello-greeting",
            "--namespace",
            "org-a-hello",
            "-o",
            "jsonpath={.data.greeting}",
        ],
        Expect::Success,
    )?;
    ensure(&greeting, "hi from alice")?;

    say(
        "bob's organization installs the same recipe on the same edge: a namespace of its own (org-b-hello)",
    );
    shell.bob(
        &[
            "install",
            "greeter",
            "--recipe",
            "hello",
            "--edge",
            "edge-1",
            "--set",
            "greeting=hi from bob",
            "--wait",
            "--timeout",
            "180s",
        ],
        Expect::Success,
    )?;
    let releases = shell.run(
        "platform",
        edge,
        "helm",
        &["list", "--all-namespaces", "--filter", "^hello$"],
        Expect::Success,
    )?;
    ensure(&releases, "org-b-hello")?;

    say("values outside the recipe's schema are refused, with the path named");
    let refused = shell.alice(
        &["set", "greeter", "--set", "image.repository=evil/image"],
        Expect::Refusal,
    )?;
    ensure(
        &refused,
        "spec.values.image: recipe \"hello\" does not let tenants set this path",
    )?;

    say("hello-next offers 0.3.0, which the platform has not published yet: the attempt fails");
    shell.alice(
        &[
            "install",
            "canary",
            "--recipe",
            "hello-next",
            "--edge",
            "edge-1",
            "--wait",
            "--timeout",
            "180s",
        ],
        Expect::Refusal,
    )?;
    let status = shell.alice(&["status", "canary"], Expect::Success)?;
    ensure(&status, "helm failed on edge edge-1")?;
    say("alice cannot see the edge; the installer kept the runner's log for her");
    shell.alice(&["logs", "canary"], Expect::Success)?;

    say(
        "while the attempt was sealed, nothing a tenant edits changes what it runs; the platform now publishes 0.3.0",
    );
    system.repo.publish("hello", "0.3.0")?;
    shell.run(
        "platform",
        &shell.hub.platform,
        "kubectl",
        &["get", "recipes"],
        Expect::Success,
    )?;

    say("a retry runs the original pinned plan (attempt 2: same chart, version and values)");
    shell.alice(
        &["retry", "canary", "--wait", "--timeout", "180s"],
        Expect::Success,
    )?;
    shell.alice(&["history", "canary"], Expect::Success)?;
    shell.alice(&["target", "canary"], Expect::Success)?;

    day_two(&shell, system)
}

/// Drift seen and repaired, then a rollback to the last good plan.
fn day_two(shell: &Shell, system: &System) -> anyhow::Result<()> {
    let edge = &shell.edge_admin;
    let configmap_greeting = [
        "get",
        "configmap",
        "hello-greeting",
        "--namespace",
        "org-a-hello",
        "-o",
        "jsonpath={.data.greeting}",
    ];
    say(
        "someone upgrades alice's release by hand on the edge: the installer reports the drift and corrects nothing",
    );
    let chart = format!("{}/hello-0.1.0.tgz", system.repo.url);
    shell.run(
        "platform",
        edge,
        "helm",
        &[
            "upgrade",
            "hello",
            &chart,
            "--namespace",
            "org-a-hello",
            "--reuse-values",
            "--set",
            "greeting=changed by hand",
        ],
        Expect::Success,
    )?;
    wait_for_greeter(shell, "--for=condition=Drifted")?;
    let status = shell.alice(&["status", "greeter"], Expect::Success)?;
    ensure(&status, "made outside the installer")?;

    say("alice repairs it: the webhook seals the installed plan again as a new attempt");
    repair_greeter(shell, edge, &configmap_greeting)?;

    say(
        "someone edits the chart's ConfigMap on the edge with kubectl edit, without helm: the installer sees it from the object's field managers, names who and which field, and corrects nothing",
    );
    // Writes in the same second as the attempt's end are taken for the install's own.
    std::thread::sleep(std::time::Duration::from_secs(2));
    shell.run_with(
        "platform",
        edge,
        &[("KUBE_EDITOR", "sed -i 's/hi from alice/edited by hand/'")],
        "kubectl",
        &[
            "edit",
            "configmap",
            "hello-greeting",
            "--namespace",
            "org-a-hello",
        ],
        Expect::Success,
    )?;
    wait_for_greeter(shell, "--for=jsonpath={.status.drift.reason}=ObjectChanged")?;
    let status = shell.alice(&["status", "greeter"], Expect::Success)?;
    ensure(&status, "was changed by kubectl-edit (data.greeting)")?;
    say("alice repairs it: helm takes the field back");
    repair_greeter(shell, edge, &configmap_greeting)?;

    say("alice upgrades to 0.1.0 with a new greeting, then rolls back to the last good plan");
    shell.alice(
        &[
            "set",
            "greeter",
            "--version",
            "0.1.0",
            "--set",
            "greeting=an experiment",
            "--wait",
            "--timeout",
            "180s",
        ],
        Expect::Success,
    )?;
    shell.alice(
        &["rollback", "greeter", "--wait", "--timeout", "180s"],
        Expect::Success,
    )?;
    let history = shell.alice(&["history", "greeter"], Expect::Success)?;
    ensure(&history, "Rollback to 3")?;
    let greeting = shell.run(
        "platform",
        edge,
        "kubectl",
        &configmap_greeting,
        Expect::Success,
    )?;
    ensure(&greeting, "hi from alice")?;
    Ok(())
}

/// alice waits until her Workspace `greeter` meets `condition` (a `kubectl wait --for`).
fn wait_for_greeter(shell: &Shell, condition: &str) -> anyhow::Result<()> {
    shell.run(
        "alice",
        &shell.hub.alice,
        "kubectl",
        &[
            "wait",
            condition,
            "workspace/greeter",
            "--namespace",
            "org-a",
            "--timeout=60s",
        ],
        Expect::Success,
    )?;
    Ok(())
}

/// alice repairs `greeter`, and the platform sees her greeting back on the edge.
fn repair_greeter(shell: &Shell, edge: &Path, configmap_greeting: &[&str]) -> anyhow::Result<()> {
    shell.alice(
        &["repair", "greeter", "--wait", "--timeout", "180s"],
        Expect::Success,
    )?;
    let greeting = shell.run(
        "platform",
        edge,
        "kubectl",
        configmap_greeting,
        Expect::Success,
    )?;
    ensure(&greeting, "hi from alice")
}

fn ensure(output: &str, text: &str) -> anyhow::Result<()> {
    if !output.contains(text) {
        bail!("expected {text:?} in the output above");
    }
    Ok(())
}
