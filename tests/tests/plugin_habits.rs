//! kubectl habits of `kubectl provider`, through the real kubectl against a real
//! kube-apiserver: `-o jsonpath` and `-o custom-columns`, `--no-headers`, `-l`, `status -w`,
//! the Events at the end of `status NAME`, `--wait` following every change, `--cluster`,
//! `--user` and `--request-timeout`, completion the way kubectl asks for it, and the krew
//! manifest's archives.
//!
//! No webhook or installer runs here (as in plugin_cluster/): plans are sealed and
//! statuses written by the test, as they would.

use std::{
    io::{BufRead, BufReader, Read},
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    sync::{OnceLock, mpsc},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use providers_tests::{
    ControlPlaneInfo, User, binaries, kubectl, platform,
    plugin::{
        self,
        fixture::{
            assert_one_error_line, get, install_catalog, running, seal, succeeded, write_status,
        },
    },
    supervised,
};
use serde_json::{Value, json};

/// The key seed plans are sealed with here (nothing verifies them in these tests).
const SEED: [u8; 32] = [42; 32];

fn plane() -> &'static ControlPlaneInfo {
    static FIXTURE: OnceLock<&'static ControlPlaneInfo> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
        install_catalog(plane).expect("the plugin's catalog is installed");
        plane
    })
}

/// A namespace of its own for one test, where alice is a tenant: lists there hold only
/// what that test made.
fn tenant_namespace(plane: &ControlPlaneInfo, name: &str) -> anyhow::Result<()> {
    let docs = [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "tenant-alice", "namespace": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "providers-tenant"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}),
    ];
    let yaml = docs
        .iter()
        .map(serde_norway::to_string)
        .collect::<Result<Vec<_>, _>>()?
        .join("---\n");
    platform::apply_yaml(plane.kubeconfig(User::Admin), &yaml)
}

/// Installs `name` as alice in `namespace` onto `edge`.
fn install(
    plane: &ControlPlaneInfo,
    namespace: &str,
    name: &str,
    edge: &str,
) -> anyhow::Result<()> {
    plugin::run(
        plane.kubeconfig(User::Alice),
        &[
            "install", name, "-n", namespace, "--recipe", "podinfo", "--edge", edge,
        ],
    )?
    .ok()?;
    Ok(())
}

/// Labels an object as the admin.
fn label(plane: &ControlPlaneInfo, args: &[&str]) -> anyhow::Result<()> {
    let mut all = vec!["label", "--overwrite"];
    all.extend_from_slice(args);
    kubectl::ok(plane.kubeconfig(User::Admin), &all)?;
    Ok(())
}

fn alice(args: &[&str]) -> anyhow::Result<plugin::Run> {
    plugin::run(plane().kubeconfig(User::Alice), args)
}

// ---------------------------------------------------------------------------------------
// -o jsonpath, -o custom-columns, --no-headers, -l
// ---------------------------------------------------------------------------------------

#[test]
fn jsonpath_and_custom_columns_read_what_json_prints() -> anyhow::Result<()> {
    let plane = plane();
    let ns = "habits-output";
    tenant_namespace(plane, ns)?;
    install(plane, ns, "alpha", "edge-1")?;
    install(plane, ns, "beta", "edge-2")?;
    seal(plane, ns, "alpha", 1, SEED)?;
    write_status(plane, ns, "alpha", succeeded("alpha", 1))?;

    let names = alice(&[
        "status",
        "-n",
        ns,
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ])?;
    assert_eq!(names.ok()?, "alpha beta");
    let ranged = alice(&[
        "status",
        "-n",
        ns,
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}:{.spec.edge}{\"\\n\"}{end}",
    ])?;
    assert_eq!(ranged.ok()?, "alpha:edge-1\nbeta:edge-2\n");
    let columns = alice(&[
        "status",
        "-n",
        ns,
        "-o",
        "custom-columns=NAME:.metadata.name,ATTEMPT:.spec.plan.attempt,RESULT:{.status.jobResult}",
    ])?;
    assert_eq!(
        columns.ok()?,
        "NAME    ATTEMPT   RESULT\nalpha   1         Succeeded\nbeta    <none>    <none>\n"
    );
    // The same JSON as -o json.
    let json: Value = serde_json::from_str(alice(&["status", "-n", ns, "-o", "json"])?.ok()?)?;
    assert_eq!(json["items"][0]["spec"]["plan"]["attempt"], 1);

    // One object: the template reads the object itself.
    let one = alice(&[
        "status",
        "alpha",
        "-n",
        ns,
        "-o",
        "jsonpath={.status.phase}",
    ])?;
    assert_eq!(one.ok()?, "Succeeded");

    // history: one row per attempt.
    let history = alice(&[
        "history",
        "alpha",
        "-n",
        ns,
        "-o",
        "custom-columns=ATTEMPT:.attempt,RESULT:.result",
    ])?;
    assert_eq!(history.ok()?, "ATTEMPT   RESULT\n1         Succeeded\n");
    let results = alice(&[
        "history",
        "alpha",
        "-n",
        ns,
        "-o",
        "jsonpath={.attempts[*].result}",
    ])?;
    assert_eq!(results.ok()?, "Succeeded");

    // recipes and edges, as lists.
    let recipes = alice(&["recipes", "-o", "jsonpath={.items[*].metadata.name}"])?;
    assert_eq!(recipes.ok()?, "podinfo redis");
    let edges = alice(&[
        "edges",
        "-o",
        "custom-columns=EDGE:.edge.metadata.name,INSTALL:.install.allowed,READY:.edge.status.ready",
    ])?;
    assert_eq!(
        edges.ok()?,
        "EDGE     INSTALL   READY\nedge-1   true      true\nedge-2   true      true\nedge-3   false     false\n"
    );
    Ok(())
}

#[test]
fn no_headers_and_selectors_work_on_every_list() -> anyhow::Result<()> {
    let plane = plane();
    let ns = "habits-select";
    tenant_namespace(plane, ns)?;
    for (name, team) in [("web", "a"), ("db", "b"), ("cache", "a")] {
        install(plane, ns, name, "edge-1")?;
        label(
            plane,
            &[
                "workspace.providers.platform.dev",
                name,
                "-n",
                ns,
                &format!("team={team}"),
            ],
        )?;
    }
    let table = alice(&["status", "-n", ns])?;
    let table = table.ok()?.to_owned();
    let bare = alice(&["status", "-n", ns, "--no-headers"])?;
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("NAME "), "{table}");
    // The rows without their last column (AGE), which may tick between the two runs.
    let without_age = |line: &str| {
        let mut fields: Vec<&str> = line.split_whitespace().collect();
        fields.pop();
        fields.join(" ")
    };
    let bare_rows: Vec<String> = bare.ok()?.lines().map(without_age).collect();
    let rows: Vec<String> = lines[1..].iter().map(|l| without_age(l)).collect();
    assert_eq!(bare_rows, rows);
    assert!(lines[0].ends_with("AGE"), "AGE is the last column: {table}");

    let team_a = alice(&["status", "-n", ns, "-l", "team=a", "-o", "name"])?;
    assert_eq!(
        team_a.ok()?,
        "workspace.providers.platform.dev/cache\nworkspace.providers.platform.dev/web\n"
    );
    let set = alice(&[
        "status",
        "-n",
        ns,
        "--selector",
        "team in (a,b),team!=a",
        "--no-headers",
        "-o",
        "custom-columns=N:.metadata.name",
    ])?;
    assert_eq!(set.ok()?, "db\n");
    let none = alice(&["status", "-n", ns, "-l", "team=z"])?;
    assert_eq!(none.ok()?, "");
    assert_eq!(
        none.stderr,
        format!("No workspaces found in namespace {ns}.\n")
    );

    // A selector the API server cannot parse: its words, on one line.
    let bad = alice(&["status", "-n", ns, "-l", "team in (a"])?;
    assert_one_error_line(bad.failed()?);
    // A name and a selector do not go together.
    let both = alice(&["status", "web", "-n", ns, "-l", "team=a"])?;
    assert_eq!(both.code, 2, "{both:?}");

    // Cluster-scoped lists.
    label(
        plane,
        &["recipe.providers.platform.dev", "redis", "tier=cache"],
    )?;
    label(
        plane,
        &["edge.providers.platform.dev", "edge-3", "region=north"],
    )?;
    let recipes = alice(&["recipes", "-l", "tier=cache", "--no-headers"])?;
    let recipes = recipes.ok()?;
    assert!(recipes.starts_with("redis "), "{recipes}");
    assert_eq!(recipes.lines().count(), 1);
    let edges = alice(&["edges", "-l", "region=north", "-o", "name"])?;
    assert_eq!(edges.ok()?, "edge.providers.platform.dev/edge-3\n");
    let bare_edges = alice(&["edges", "--no-headers"])?;
    assert_eq!(bare_edges.ok()?.lines().count(), 3);
    Ok(())
}

#[test]
fn bad_templates_are_usage_errors_that_name_the_flag() -> anyhow::Result<()> {
    for (output, says) in [
        ("jsonpath={.items[", "unclosed { at character 1"),
        ("jsonpath={.items[}", "invalid path"),
        ("jsonpath={range .items[*]}{.a}", "has no {end}"),
        ("jsonpath={end}", "{end} without a {range}"),
        ("jsonpath=", "empty"),
        ("jsonpath", "needs a template"),
        ("custom-columns=NAME", "is not HEADER:PATH"),
        ("custom-columns=A:.a,B:.b[?(", "column B: invalid path"),
        ("go-template={{.x}}", "unknown output format"),
    ] {
        let run = plugin::run_offline(&["status", "-o", output])?;
        assert_eq!(run.code, 2, "{output}: {run:?}");
        assert!(
            run.stderr.contains("'--output <FORMAT>'"),
            "{output}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(says), "{output}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{output}: {}", run.stderr);
    }
    // Every subcommand's help says what -o takes, range included.
    let help = plugin::run_offline(&["status", "--help"])?;
    assert!(help.ok()?.contains("jsonpath=TEMPLATE"), "{}", help.stdout);
    assert!(help.stdout.contains("{range .items[*]}"), "{}", help.stdout);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// status -w
// ---------------------------------------------------------------------------------------

/// A running `kubectl provider` whose stdout is read line by line.
struct Streaming {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Streaming {
    fn start(mut command: Command) -> anyhow::Result<Self> {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let stdout = child.stdout.take().context("stdout")?;
        let (send, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self { child, lines })
    }

    /// The next line, within 20 s.
    fn next(&self) -> anyhow::Result<String> {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .context("no line within 20 s")
    }

    /// Ctrl-C, then how it ended and what it said on stderr.
    fn interrupt(mut self) -> anyhow::Result<(Option<i32>, String)> {
        let pid = self.child.id().to_string();
        // kubectl runs the plugin in its own process (exec), so this is the plugin.
        let kill = Command::new("kill").args(["-INT", &pid]).status()?;
        assert!(kill.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait()? {
                let mut stderr = String::new();
                if let Some(mut err) = self.child.stderr.take() {
                    err.read_to_string(&mut stderr)?;
                }
                return Ok((status.code(), stderr));
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                bail!("the watch did not end within 10 s of Ctrl-C");
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn status_watch_prints_a_row_per_change_until_ctrl_c() -> anyhow::Result<()> {
    let plane = plane();
    let ns = "habits-watch";
    tenant_namespace(plane, ns)?;
    install(plane, ns, "watched", "edge-1")?;
    let mut command = plugin::command(&["status", "-w", "-n", ns])?;
    command
        .arg("--kubeconfig")
        .arg(plane.kubeconfig(User::Alice));
    let watch = Streaming::start(command)?;
    let header = watch.next()?;
    assert!(header.starts_with("NAME      RECIPE    EDGE"), "{header}");
    let first = watch.next()?;
    assert!(
        first.starts_with("watched ") && first.contains("Unsealed"),
        "{first}"
    );

    seal(plane, ns, "watched", 1, SEED)?;
    let sealed = watch.next()?;
    assert!(
        sealed.starts_with("watched ") && sealed.contains(" Sealed "),
        "{sealed}"
    );
    write_status(plane, ns, "watched", running("watched", 1))?;
    let progressing = watch.next()?;
    assert!(progressing.contains(" Progressing "), "{progressing}");
    // A new Workspace shows up too, without a header.
    install(plane, ns, "newcomer", "edge-2")?;
    let newcomer = watch.next()?;
    assert!(newcomer.starts_with("newcomer "), "{newcomer}");

    let (code, stderr) = watch.interrupt()?;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr, "");
    Ok(())
}

#[test]
fn status_watch_of_one_workspace_in_other_formats() -> anyhow::Result<()> {
    let plane = plane();
    let ns = "habits-watch-one";
    tenant_namespace(plane, ns)?;
    install(plane, ns, "single", "edge-1")?;
    install(plane, ns, "other", "edge-1")?;
    let mut command = plugin::command(&[
        "status",
        "single",
        "-w",
        "-n",
        ns,
        "-o",
        "jsonpath={.metadata.name}={.status.phase}{\"\\n\"}",
    ])?;
    command
        .arg("--kubeconfig")
        .arg(plane.kubeconfig(User::Alice));
    let watch = Streaming::start(command)?;
    assert_eq!(watch.next()?, "single=");
    write_status(plane, ns, "other", running("other", 1))?;
    seal(plane, ns, "single", 1, SEED)?;
    write_status(plane, ns, "single", succeeded("single", 1))?;
    // The plan, then the status: each change once, and nothing about `other`.
    assert_eq!(watch.next()?, "single=");
    assert_eq!(watch.next()?, "single=Succeeded");
    let (code, _) = watch.interrupt()?;
    assert_eq!(code, Some(0));

    let conflict = plugin::run_offline(&["status", "x", "-w", "--wait"])?;
    assert_eq!(conflict.code, 2, "{conflict:?}");
    Ok(())
}

// ---------------------------------------------------------------------------------------
// status NAME ends with its Events
// ---------------------------------------------------------------------------------------

fn ago(minutes: i64) -> anyhow::Result<String> {
    let t = Timestamp::now().checked_sub(SignedDuration::from_secs(minutes * 60))?;
    Ok(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

#[test]
fn status_ends_with_the_workspace_s_recent_events() -> anyhow::Result<()> {
    let plane = plane();
    let ns = "habits-events";
    tenant_namespace(plane, ns)?;
    install(plane, ns, "eventful", "edge-1")?;
    let uid = get(plane, ns, "eventful")?["metadata"]["uid"]
        .as_str()
        .context("uid")?
        .to_owned();
    let event = |n: i64, uid: &str, type_: &str, count: i64, first: i64| -> anyhow::Result<Value> {
        Ok(json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("eventful.{uid}.{n:02}"), "namespace": ns},
            "involvedObject": {"apiVersion": "providers.platform.dev/v1alpha1", "kind": "Workspace",
                               "name": "eventful", "namespace": ns, "uid": uid},
            "type": type_, "reason": format!("Step{n:02}"), "message": format!("step {n} of the attempt"),
            "count": count, "firstTimestamp": ago(first)?, "lastTimestamp": ago(30 - n)?,
            "source": {"component": "providers-installer"}
        }))
    };
    // Twelve Events about it, the last one repeated; one about an older Workspace of the same
    // name, newer than all of them.
    let mut docs = Vec::new();
    for n in 1..=11 {
        docs.push(event(n, &uid, "Normal", 1, 30 - n)?);
    }
    docs.push(event(12, &uid, "Warning", 3, 25)?);
    docs.push(event(29, "uid-of-a-deleted-one", "Warning", 1, 1)?);
    let yaml = docs
        .iter()
        .map(serde_norway::to_string)
        .collect::<Result<Vec<_>, _>>()?
        .join("---\n");
    platform::apply_yaml(plane.kubeconfig(User::Admin), &yaml)?;

    let run = alice(&["status", "eventful", "-n", ns])?;
    let out = run.ok()?;
    let (_, events) = out.split_once("\nEvents:\n").context(out.to_owned())?;
    let lines: Vec<&str> = events.lines().collect();
    assert!(
        lines[0].starts_with("  TYPE      REASON   AGE")
            && lines[0].ends_with("FROM                  MESSAGE"),
        "{events}"
    );
    // The ten most recent, oldest first.
    assert_eq!(lines.len(), 11, "{events}");
    assert!(
        lines[1].starts_with("  Normal    Step03   27m "),
        "{events}"
    );
    assert!(
        lines[1].ends_with("providers-installer   step 3 of the attempt"),
        "{events}"
    );
    assert!(
        lines[10].starts_with("  Warning   Step12   18m (x3 over 25m)"),
        "{events}"
    );
    assert!(
        !events.contains("Step29") && !events.contains("Step02"),
        "{events}"
    );
    // Scripts get the object alone.
    let json: Value =
        serde_json::from_str(alice(&["status", "eventful", "-n", ns, "-o", "json"])?.ok()?)?;
    assert_eq!(json["kind"], "Workspace");

    // Without Events, the status ends where it always did.
    install(plane, ns, "quiet", "edge-1")?;
    let quiet = alice(&["status", "quiet", "-n", ns])?;
    assert!(!quiet.ok()?.contains("Events:"), "{}", quiet.stdout);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// --wait watches
// ---------------------------------------------------------------------------------------

#[test]
fn wait_sees_every_change_the_moment_it_happens() -> anyhow::Result<()> {
    let plane = plane();
    let ns = "habits-wait";
    tenant_namespace(plane, ns)?;
    install(plane, ns, "brief", "edge-1")?;
    seal(plane, ns, "brief", 1, SEED)?;
    let mut command =
        plugin::command(&["status", "brief", "-n", ns, "--wait", "--timeout", "60s"])?;
    command
        .arg("--kubeconfig")
        .arg(plane.kubeconfig(User::Alice))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    let mut stderr = BufReader::new(child.stderr.take().context("stderr")?);
    let mut first = String::new();
    stderr.read_line(&mut first)?;
    assert_eq!(
        first,
        "waiting: attempt 1 sealed, waiting for the installer\n"
    );
    // Running lasts only as long as the next write takes: a watch still reports it.
    write_status(plane, ns, "brief", running("brief", 1))?;
    write_status(plane, ns, "brief", succeeded("brief", 1))?;
    let written = Instant::now();
    let out = child.wait_with_output()?;
    let reacted = written.elapsed();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest)?;
    assert!(out.status.success(), "{rest}");
    assert_eq!(
        rest,
        "waiting: attempt 1 running (job podinfo-brief-1): JobRunning: helm upgrade --install is running\n"
    );
    assert!(reacted < Duration::from_secs(3), "{reacted:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Phase:      Succeeded"));

    // A Workspace that does not exist: said at once, as before.
    let missing = alice(&[
        "status",
        "nothing-here",
        "-n",
        ns,
        "--wait",
        "--timeout",
        "30s",
    ])?;
    assert_eq!(
        missing.failed()?,
        format!(
            "error: workspace \"nothing-here\" not found in namespace {ns}\nhint: list them with: kubectl provider status\n"
        )
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// --cluster, --user, --request-timeout
// ---------------------------------------------------------------------------------------

/// A kubeconfig with alice's context (current), bob as a second user, and a second cluster
/// `closed` where nothing listens.
fn two_users_two_clusters(
    plane: &ControlPlaneInfo,
    dir: &Path,
) -> anyhow::Result<std::path::PathBuf> {
    let read = |user: User| -> anyhow::Result<Value> {
        Ok(serde_norway::from_str(&std::fs::read_to_string(
            plane.kubeconfig(user),
        )?)?)
    };
    let (mut merged, bob) = (read(User::Alice)?, read(User::Bob)?);
    let bob_user = bob["users"][0].clone();
    merged["users"]
        .as_array_mut()
        .context("users")?
        .push(bob_user);
    let mut closed = merged["clusters"][0].clone();
    closed["name"] = json!("closed");
    closed["cluster"]["server"] = json!("https://127.0.0.1:1");
    merged["clusters"]
        .as_array_mut()
        .context("clusters")?
        .push(closed);
    let path = dir.join("many.kubeconfig");
    std::fs::write(&path, serde_norway::to_string(&merged)?)?;
    Ok(path)
}

#[test]
fn cluster_and_user_choose_from_the_kubeconfig() -> anyhow::Result<()> {
    let plane = plane();
    let dir = tempfile::tempdir()?;
    let path = two_users_two_clusters(plane, dir.path())?;
    let bob = serde_norway::from_str::<Value>(&std::fs::read_to_string(
        plane.kubeconfig(User::Bob),
    )?)?["users"][0]["name"]
        .as_str()
        .context("bob's user")?
        .to_owned();

    let as_alice = plugin::run(&path, &["edges"])?;
    plugin::check_snapshot("edges_alice", as_alice.ok()?)?;
    let as_bob = plugin::run(&path, &["edges", "--user", &bob])?;
    plugin::check_snapshot("edges_bob", as_bob.ok()?)?;

    let closed = plugin::run(&path, &["recipes", "--cluster", "closed"])?;
    let stderr = closed.failed()?;
    assert_one_error_line(stderr);
    assert!(
        stderr
            .starts_with("error: cannot reach the Kubernetes API server at https://127.0.0.1:1: "),
        "{stderr}"
    );
    for (flag, name) in [("--cluster", "nowhere"), ("--user", "nobody")] {
        let run = plugin::run(&path, &["recipes", flag, name])?;
        let stderr = run.failed()?;
        assert!(
            stderr.starts_with(&format!(
                "error: cannot use the kubeconfig ({} {name}): ",
                &flag[2..]
            )),
            "{stderr}"
        );
    }

    // `org add` names its tenant users with --tenant-user; --user stays the kubeconfig's.
    let org = plugin::run(
        plane.kubeconfig(User::Admin),
        &[
            "org",
            "add",
            "habits-org",
            "--tenant-user",
            "carol",
            "--dry-run",
            "-o",
            "jsonpath={.items[1].subjects[*].name}",
        ],
    )?;
    assert_eq!(org.ok()?, "carol");
    Ok(())
}

#[test]
fn request_timeout_bounds_a_silent_server() -> anyhow::Result<()> {
    let plane = plane();
    // Accepts connections and never answers; gives up by itself after 30 s.
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    listener.set_nonblocking(true)?;
    let silent = thread::spawn(move || {
        let mut held = Vec::new();
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until && held.len() < 16 {
            match listener.accept() {
                Ok((stream, _)) => held.push(stream),
                Err(_) => thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("silent.kubeconfig");
    providers_tests::kubeconfig::write(
        &kubeconfig,
        "silent",
        &format!("https://127.0.0.1:{port}"),
        &plane.ca_pem()?,
        "alice",
        "token",
        Some("org-a"),
    )?;
    let started = Instant::now();
    let run = plugin::run(&kubeconfig, &["status", "--request-timeout", "1s"])?;
    let took = started.elapsed();
    assert_eq!(
        run.failed()?,
        format!(
            "error: cannot reach the Kubernetes API server at https://127.0.0.1:{port}: no answer within the request timeout (--request-timeout)\n\
             hint: check the kubeconfig's server and credentials (--kubeconfig, --context)\n"
        )
    );
    assert!(took < Duration::from_secs(8), "{took:?}");
    drop(silent);

    // 0 means no limit; a real server answers.
    let unlimited = alice(&["recipes", "--request-timeout", "0", "-o", "name"])?;
    assert!(
        unlimited
            .ok()?
            .contains("recipe.providers.platform.dev/podinfo")
    );
    let minute = alice(&["recipes", "--request-timeout=1m", "--no-headers"])?;
    assert_eq!(minute.ok()?.lines().count(), 2);
    let bad = plugin::run_offline(&["recipes", "--request-timeout", "soon"])?;
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad.stderr.contains("--request-timeout"), "{}", bad.stderr);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Completion, as kubectl asks for it
// ---------------------------------------------------------------------------------------

/// `kubectl __complete provider WORDS...`: kubectl runs `kubectl_complete-provider WORDS...`
/// from PATH and prints its answer. Returns the candidates (without descriptions) and the
/// directive line.
fn complete(words: &[&str], kubeconfig: Option<&Path>) -> anyhow::Result<(Vec<String>, String)> {
    let mut command = Command::new("kubectl");
    command
        .arg("__complete")
        .arg("provider")
        .args(words)
        .env("PATH", plugin::path_with_plugin()?)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null());
    if let Some(kubeconfig) = kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    let out = command.output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("kubectl_complete-provider"),
        "kubectl did not run the completion executable: {stderr}"
    );
    let mut lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
    let directive = lines.pop().context("no directive line")?;
    let names = lines
        .iter()
        .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
        .collect();
    Ok((names, directive))
}

#[test]
fn completion_through_kubectl_offers_commands_flags_and_names() -> anyhow::Result<()> {
    let plane = plane();
    let ns = "habits-complete";
    tenant_namespace(plane, ns)?;
    install(plane, ns, "comp-one", "edge-1")?;
    install(plane, ns, "comp-two", "edge-2")?;
    let kubeconfig = plane.kubeconfig(User::Alice).display().to_string();

    assert_eq!(
        complete(&["st"], None)?,
        (vec!["status".to_owned()], ":4".to_owned())
    );
    let (subcommands, _) = complete(&[""], None)?;
    for expected in ["recipes", "edges", "install", "status", "org", "version"] {
        assert!(subcommands.iter().any(|s| s == expected), "{subcommands:?}");
    }
    assert_eq!(
        complete(&["status", "--wa"], None)?,
        (
            vec!["--watch".to_owned(), "--wait".to_owned()],
            ":4".to_owned()
        )
    );
    assert_eq!(
        complete(&["status", "-o", "j"], None)?,
        (
            vec!["json".to_owned(), "jsonpath=".to_owned()],
            ":6".to_owned()
        )
    );

    let k = kubeconfig.as_str();
    assert_eq!(
        complete(&["--kubeconfig", k, "-n", ns, "status", ""], None)?,
        (
            vec!["comp-one".to_owned(), "comp-two".to_owned()],
            ":4".to_owned()
        )
    );
    assert_eq!(
        complete(
            &["--kubeconfig", k, "--namespace", ns, "retry", "comp-t"],
            None
        )?
        .0,
        ["comp-two"]
    );
    assert_eq!(
        complete(&["--kubeconfig", k, "install", "x", "--recipe", ""], None)?.0,
        ["podinfo", "redis"]
    );
    assert_eq!(
        complete(
            &["--kubeconfig", k, "install", "x", "--edge", "edge-"],
            None
        )?
        .0,
        ["edge-1", "edge-2", "edge-3"]
    );
    assert_eq!(
        complete(&["--kubeconfig", k, "recipes", "r"], None)?.0,
        ["redis"]
    );
    let context =
        serde_norway::from_str::<Value>(&std::fs::read_to_string(&kubeconfig)?)?["current-context"]
            .as_str()
            .context("context")?
            .to_owned();
    assert_eq!(
        complete(&["--kubeconfig", k, "--context", ""], None)?.0,
        [context]
    );

    // KUBECONFIG from the environment, the context's namespace: alice's org-a.
    install(plane, "org-a", "comp-default", "edge-1")?;
    let (names, directive) = complete(&["status", "comp-d"], Some(Path::new(k)))?;
    assert_eq!(
        (names, directive.as_str()),
        (vec!["comp-default".to_owned()], ":4")
    );

    // A cluster that cannot be reached offers nothing, quickly and quietly.
    let dir = tempfile::tempdir()?;
    let path = two_users_two_clusters(plane, dir.path())?;
    let started = Instant::now();
    let unreachable = complete(
        &[
            "--kubeconfig",
            &path.display().to_string(),
            "--cluster",
            "closed",
            "status",
            "",
        ],
        None,
    )?;
    assert_eq!(unreachable, (vec![], ":4".to_owned()));
    assert!(started.elapsed() < Duration::from_secs(10));
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Krew
// ---------------------------------------------------------------------------------------

#[test]
fn the_krew_manifest_names_the_release_archives() -> anyhow::Result<()> {
    let root = binaries::workspace_root()?;
    let manifest: Value = serde_norway::from_str(&std::fs::read_to_string(
        root.join("plugin/krew/provider.yaml"),
    )?)?;
    let version = manifest["spec"]["version"]
        .as_str()
        .context("spec.version")?;
    assert_eq!(version, format!("v{}", env!("CARGO_PKG_VERSION")));
    let release = std::fs::read_to_string(root.join("plugin/RELEASE.md"))?;
    assert!(
        release.contains("kubectl-provider_${version}_${os}_${arch}.tar.gz"),
        "RELEASE.md documents the archive names"
    );
    let cargo = std::fs::read_to_string(root.join("plugin/Cargo.toml"))?;
    let binaries = ["kubectl-provider", "kubectl_complete-provider"];
    for binary in binaries {
        assert!(
            cargo.contains(&format!("name = \"{binary}\"")),
            "{binary} is a binary of the plugin crate"
        );
    }

    let platforms = manifest["spec"]["platforms"]
        .as_array()
        .context("platforms")?;
    let mut seen = Vec::new();
    for platform in platforms {
        let labels = &platform["selector"]["matchLabels"];
        let (os, arch) = (
            labels["os"].as_str().context("os")?,
            labels["arch"].as_str().context("arch")?,
        );
        seen.push(format!("{os}/{arch}"));
        let archive = format!("kubectl-provider_{version}_{os}_{arch}.tar.gz");
        assert_eq!(
            platform["uri"],
            format!("https://providers.platform.dev/releases/{version}/{archive}"),
            "{os}/{arch}"
        );
        assert!(release.contains(&format!(
            "`kubectl-provider_${{version}}_{os}_{arch}.tar.gz`"
        )));
        let sha = platform["sha256"].as_str().context("sha256")?;
        assert!(
            sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()),
            "{sha}"
        );
        assert_eq!(platform["bin"], "kubectl-provider");
        let files: Vec<(&str, &str)> = platform["files"]
            .as_array()
            .context("files")?
            .iter()
            .map(|f| {
                (
                    f["from"].as_str().unwrap_or(""),
                    f["to"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            files,
            [
                ("kubectl-provider", "."),
                ("kubectl_complete-provider", "."),
                ("LICENSE", ".")
            ],
            "{os}/{arch}"
        );
    }
    seen.sort();
    assert_eq!(
        seen,
        ["darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"]
    );
    assert!(root.join("LICENSE").is_file());
    let caveats = manifest["spec"]["caveats"].as_str().context("caveats")?;
    assert!(
        caveats.contains(&format!(
            "store/provider/{version}/kubectl_complete-provider"
        )),
        "{caveats}"
    );
    Ok(())
}
