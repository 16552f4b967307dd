//! `kubectl provider` through the real kubectl against a real kube-apiserver, as a tenant
//! (alice) and as the platform admin, in table, wide, yaml, json and name output.
//!
//! No webhook runs here: plans are sealed by the test with a key whose public half is
//! published in the keys ConfigMap, and status is written through the status
//! subresource, as the webhook and the installer would. What needs the real webhook
//! (its denials, its sealing) is in plugin_webhook.rs.

use std::{path::Path, process::Stdio, sync::OnceLock, time::Duration};

use anyhow::Context;
use providers::seal::Sealer;
use serde_json::{Value, json};
use testbed::{
    ControlPlaneInfo, User, kubectl,
    plugin::{
        self,
        fixture::{
            SHOWCASE, assert_one_error_line, failed, get, install_catalog, running, seal,
            succeeded, wait_for, write_plan, write_status,
        },
    },
    supervised,
    webhook::publish_keys,
};

/// The seed of the key whose public half is published.
const PUBLISHED: [u8; 32] = [42; 32];
/// A key nobody published.
const UNKNOWN: [u8; 32] = [7; 32];

fn plane() -> &'static ControlPlaneInfo {
    static FIXTURE: OnceLock<&'static ControlPlaneInfo> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
        set_up(plane).expect("the plugin's fixture is set up");
        plane
    })
}

fn set_up(plane: &'static ControlPlaneInfo) -> anyhow::Result<()> {
    install_catalog(plane)?;
    let sealer = Sealer::from_seed(PUBLISHED);
    publish_keys(plane, sealer.key_id(), &sealer.public_key_pem())?;

    // The showcase: `shown` failed once, was retried and succeeded; `fresh` is not sealed.
    let alice = plane.kubeconfig(User::Alice);
    plugin::run(
        alice,
        &[
            "install",
            "shown",
            "-n",
            SHOWCASE,
            "--recipe",
            "podinfo",
            "--edge",
            "edge-1",
            "--set",
            "replicaCount=2,ui.message=hello",
        ],
    )?
    .ok()?;
    seal(plane, SHOWCASE, "shown", 1, PUBLISHED)?;
    write_status(plane, SHOWCASE, "shown", failed("shown", 1))?;
    plugin::run(alice, &["retry", "shown", "-n", SHOWCASE])?.ok()?;
    seal(plane, SHOWCASE, "shown", 2, PUBLISHED)?;
    write_status(plane, SHOWCASE, "shown", succeeded("shown", 2))?;
    plugin::run(
        alice,
        &[
            "install", "fresh", "-n", SHOWCASE, "--recipe", "podinfo", "--edge", "edge-2",
        ],
    )?
    .ok()?;
    Ok(())
}

/// Output stable across runs: UIDs replaced, ages masked.
fn stable(plane: &ControlPlaneInfo, text: &str) -> anyhow::Result<String> {
    let uid = get(plane, SHOWCASE, "shown")?["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok(plugin::normalize(text, &[(&uid, "<uid>")]))
}

// ---------------------------------------------------------------------------------------
// Read-only views: the same table for the tenant and the platform admin.
// ---------------------------------------------------------------------------------------

#[test]
fn read_views_match_their_snapshots_for_tenant_and_admin() -> anyhow::Result<()> {
    let plane = plane();
    let cases: [(&[&str], &str); 14] = [
        (&["recipes"], "recipes"),
        (&["recipes", "-o", "wide"], "recipes_wide"),
        (&["recipes", "podinfo"], "recipe_podinfo"),
        (&["recipes", "redis"], "recipe_redis"),
        (&["status", "-n", SHOWCASE], "status_list"),
        (
            &["status", "-n", SHOWCASE, "-o", "wide"],
            "status_list_wide",
        ),
        (&["status", "shown", "-n", SHOWCASE], "status_shown"),
        (&["status", "fresh", "-n", SHOWCASE], "status_fresh"),
        (&["plan", "shown", "-n", SHOWCASE], "plan_shown"),
        (
            &["plan", "shown", "-n", SHOWCASE, "--verify"],
            "plan_shown_verified",
        ),
        (&["history", "shown", "-n", SHOWCASE], "history_shown"),
        (
            &["history", "shown", "-n", SHOWCASE, "-o", "wide"],
            "history_shown_wide",
        ),
        (&["target", "shown", "-n", SHOWCASE], "target_shown"),
        (
            &["target", "shown", "-n", SHOWCASE, "-o", "wide"],
            "target_shown_wide",
        ),
    ];
    for (args, snapshot) in cases {
        for user in [User::Alice, User::PlatformAdmin] {
            let run = plugin::run(plane.kubeconfig(user), args)?;
            let out = run
                .ok()
                .with_context(|| format!("{} as {}", args.join(" "), user.name()))?;
            plugin::check_snapshot(snapshot, &stable(plane, out)?)
                .with_context(|| format!("{} as {}", args.join(" "), user.name()))?;
        }
    }
    Ok(())
}

#[test]
fn edges_show_each_user_s_own_install_permission() -> anyhow::Result<()> {
    let plane = plane();
    for (user, snapshot) in [
        (User::Alice, "edges_alice"),
        (User::Bob, "edges_bob"),
        (User::PlatformAdmin, "edges_platform_admin"),
    ] {
        let run = plugin::run(plane.kubeconfig(user), &["edges"])?;
        plugin::check_snapshot(snapshot, run.ok()?)?;
    }
    let wide = plugin::run(plane.kubeconfig(User::Alice), &["edges", "-o", "wide"])?;
    plugin::check_snapshot("edges_alice_wide", wide.ok()?)?;
    // The platform admin asking on alice's behalf sees exactly what alice sees.
    let as_alice = plugin::run(
        plane.kubeconfig(User::PlatformAdmin),
        &["edges", "--as", "alice", "--as-group", "tenants"],
    )?;
    plugin::check_snapshot("edges_alice", as_alice.ok()?)?;
    // One edge by name.
    let one = plugin::run(plane.kubeconfig(User::Bob), &["edges", "edge-2"])?;
    assert_eq!(
        one.ok()?,
        "NAME     CLUSTER          READY   INSTALL\nedge-2   cluster-edge-2   true    yes\n"
    );
    Ok(())
}

#[test]
fn yaml_and_json_carry_the_same_objects_for_tenant_and_admin() -> anyhow::Result<()> {
    let plane = plane();
    type Check = fn(&Value) -> bool;
    let cases: [(&[&str], Check); 9] = [
        (&["recipes"], |v| {
            v["kind"] == "List" && v["items"][0]["metadata"]["name"] == "podinfo"
        }),
        (&["recipes", "podinfo"], |v| {
            v["kind"] == "Recipe" && v["spec"]["versions"][0] == "6.5.0"
        }),
        (&["edges"], |v| {
            v["edges"][0]["edge"]["kind"] == "Edge"
                && v["edges"][0]["install"]["allowed"].is_boolean()
        }),
        (&["status", "-n", SHOWCASE], |v| {
            v["kind"] == "List" && v["items"].as_array().is_some_and(|i| i.len() == 2)
        }),
        (&["status", "shown", "-n", SHOWCASE], |v| {
            v["kind"] == "Workspace"
                && v["status"]["jobResult"] == "Succeeded"
                && v["metadata"].get("managedFields").is_none()
        }),
        (&["plan", "shown", "-n", SHOWCASE], |v| {
            v["attempt"] == 2 && v["seal"]["algorithm"] == "Ed25519"
        }),
        (&["plan", "shown", "-n", SHOWCASE, "--verify"], |v| {
            v["attempt"] == 2
        }),
        (&["history", "shown", "-n", SHOWCASE], |v| {
            v["attempts"].as_array().is_some_and(|a| a.len() == 2)
                && v["attempts"][0]["result"] == "Failed"
        }),
        (&["target", "shown", "-n", SHOWCASE], |v| {
            v["edge"] == "edge-1" && v["cluster"] == "cluster-edge-1" && v["release"] == "podinfo"
        }),
    ];
    for (args, check) in cases {
        for user in [User::Alice, User::PlatformAdmin] {
            let what = format!("{} as {}", args.join(" "), user.name());
            let yaml_args: Vec<&str> = args.iter().copied().chain(["-o", "yaml"]).collect();
            let json_args: Vec<&str> = args.iter().copied().chain(["-o", "json"]).collect();
            let yaml_run = plugin::run(plane.kubeconfig(user), &yaml_args)?;
            let yaml: Value = serde_norway::from_str(yaml_run.ok().context(what.clone())?)?;
            let json_run = plugin::run(plane.kubeconfig(user), &json_args)?;
            let json: Value = serde_json::from_str(json_run.ok().context(what.clone())?)?;
            assert_eq!(yaml, json, "{what}");
            assert!(check(&json), "{what}: {json:#}");
        }
    }
    Ok(())
}

#[test]
fn name_output_prints_kind_group_slash_name() -> anyhow::Result<()> {
    let plane = plane();
    let run = plugin::run(
        plane.kubeconfig(User::Alice),
        &["status", "-n", SHOWCASE, "-o", "name"],
    )?;
    assert_eq!(
        run.ok()?,
        "workspace.providers.platform.dev/fresh\nworkspace.providers.platform.dev/shown\n"
    );
    let run = plugin::run(
        plane.kubeconfig(User::PlatformAdmin),
        &["recipes", "-o", "name"],
    )?;
    assert_eq!(
        run.ok()?,
        "recipe.providers.platform.dev/podinfo\nrecipe.providers.platform.dev/redis\n"
    );
    Ok(())
}

#[test]
fn all_namespaces_lists_every_organization_for_those_allowed() -> anyhow::Result<()> {
    let plane = plane();
    let run = plugin::run(plane.kubeconfig(User::PlatformAdmin), &["status", "-A"])?;
    let out = run.ok()?;
    assert!(out.starts_with("NAMESPACE   NAME"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with(SHOWCASE) && l.contains("shown") && l.contains("Succeeded")),
        "{out}"
    );
    // A tenant may not list across namespaces: the API server's answer, on one line.
    let denied = plugin::run(plane.kubeconfig(User::Alice), &["status", "-A"])?;
    let stderr = denied.failed()?;
    assert_one_error_line(stderr);
    assert!(
        stderr.contains("User \"alice\" cannot list resource \"workspaces\""),
        "{stderr}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Install: server-side apply with field manager kubectl-provider.
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Pinned values, set, retry.
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// --wait
// ---------------------------------------------------------------------------------------

#[test]
fn wait_follows_an_attempt_until_it_is_ready() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    plugin::run(
        alice,
        &[
            "install", "waited", "--recipe", "podinfo", "--edge", "edge-1",
        ],
    )?
    .ok()?;
    seal(plane, "org-a", "waited", 1, PUBLISHED)?;
    let mut command = plugin::command(&["status", "waited", "--wait", "--timeout", "60s"])?;
    command
        .arg("--kubeconfig")
        .arg(alice)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn()?;
    std::thread::sleep(Duration::from_millis(1500));
    write_status(plane, "org-a", "waited", running("waited", 1))?;
    std::thread::sleep(Duration::from_millis(1500));
    write_status(plane, "org-a", "waited", succeeded("waited", 1))?;
    let out = child.wait_with_output()?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Piped, progress is one plain line per change.
    assert_eq!(
        stderr,
        "waiting: attempt 1 sealed, waiting for the installer\n\
         waiting: attempt 1 running (job podinfo-waited-1): JobRunning: helm upgrade --install is running\n"
    );
    assert!(stdout.contains("Phase:      Succeeded"), "{stdout}");
    Ok(())
}

#[test]
fn install_wait_fails_when_the_attempt_fails() -> anyhow::Result<()> {
    let plane = plane();
    let mut command = plugin::command(&[
        "install",
        "doomed",
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
    wait_for(plane, "org-a", "doomed")?;
    seal(plane, "org-a", "doomed", 1, PUBLISHED)?;
    write_status(plane, "org-a", "doomed", failed("doomed", 1))?;
    let out = child.wait_with_output()?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(stdout, "workspace.providers.platform.dev/doomed created\n");
    let last: Vec<&str> = stderr
        .lines()
        .skip_while(|l| l.starts_with("waiting: "))
        .collect();
    assert_eq!(
        last,
        [
            "error: doomed: attempt 1 failed: helm exited 1: context deadline exceeded",
            "hint: see kubectl provider status doomed -n org-a; after a failure: kubectl provider retry doomed -n org-a",
        ],
        "{stderr}"
    );
    Ok(())
}

#[test]
fn wait_gives_up_at_the_timeout_and_says_where_it_was() -> anyhow::Result<()> {
    let plane = plane();
    let alice = plane.kubeconfig(User::Alice);
    let started = std::time::Instant::now();
    let run = plugin::run(
        alice,
        &[
            "install",
            "slow",
            "--recipe",
            "podinfo",
            "--edge",
            "edge-1",
            "--wait",
            "--timeout",
            "2s",
        ],
    )?;
    let stderr = run.failed()?;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        stderr.contains(
            "error: timed out after 2s waiting for slow: waiting for the webhook to seal the plan"
        ),
        "{stderr}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// plan --verify
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// delete, errors, kubeconfig handling
// ---------------------------------------------------------------------------------------

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
    testbed::kubeconfig::write(
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
    let bare = testbed::Supervised::start(
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
