//! Read-only views: the same table for the tenant and the platform admin.

use super::*;

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
        "NAME     CLUSTER          READY   INSTALL   INSTALLER\nedge-2   cluster-edge-2   true    yes       -\n"
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
