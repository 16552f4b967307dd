//! The alerts and the dashboard (manifests/monitoring, charts/providers): promtool, built
//! from the Prometheus Go module by tests/monitoring/build.sh, checks the rules and runs
//! their unit tests (tests/monitoring/rules_test.yaml), in which every alert fires on a
//! failing series and stays silent on a healthy one; every dashboard query parses; every
//! alert has a runbook section; the labels the rules and panels group by are bounded sets;
//! the PrometheusRule, the chart and the kustomize build carry the same rules and
//! dashboard.
//!
//! A missing promtool fails these tests: run `bash tests/monitoring/build.sh` (tests/run.sh
//! does).

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::Command,
};

use providers_tests::binaries;
use serde_json::Value;

const RULES: &str = "manifests/monitoring/rules.yaml";
const RULE_TESTS: &str = "tests/monitoring/rules_test.yaml";
const DASHBOARD: &str = "manifests/monitoring/dashboard.json";
const PROMETHEUS_RULE: &str = "manifests/monitoring/prometheusrule.yaml";

fn root() -> PathBuf {
    binaries::workspace_root().unwrap()
}

/// promtool from `PROVIDERS_PROMTOOL`, or where tests/monitoring/build.sh links it.
fn promtool() -> PathBuf {
    let path = std::env::var_os("PROVIDERS_PROMTOOL")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/monitoring/bin/promtool"));
    assert!(
        path.exists(),
        "{} is missing: run `bash tests/monitoring/build.sh` first (tests/run.sh does)",
        path.display()
    );
    path
}

/// Runs promtool in the workspace root; its exit status and output.
fn run_promtool(args: &[&str]) -> (bool, String) {
    let out = Command::new(promtool())
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn yaml(path: &Path) -> Value {
    serde_norway::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every YAML document of a stream, as JSON values (empty documents dropped).
fn documents(yaml: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(yaml)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|doc: &Value| !doc.is_null())
        .collect()
}

/// The alerting rules of rules.yaml.
fn alerts() -> Vec<Value> {
    let rules = yaml(&root().join(RULES));
    rules["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap().clone())
        .collect()
}

/// Every query of the dashboard, with its panel's title.
fn dashboard_queries() -> Vec<(String, String)> {
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(DASHBOARD)).unwrap()).unwrap();
    dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|panel| {
            let title = panel["title"].as_str().unwrap_or_default().to_owned();
            panel["targets"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |t| (title.clone(), t["expr"].as_str().unwrap().to_owned()))
        })
        .collect()
}

/// `promtool check rules` passes on the rules; `promtool test rules` passes on their unit
/// tests, in which each alert has a group where it fires and one where it stays silent.
#[test]
fn promtool_checks_the_rules_and_runs_their_unit_tests() {
    let alerts = alerts();
    let names: BTreeSet<&str> = alerts
        .iter()
        .map(|a| a["alert"].as_str().unwrap())
        .collect();
    assert!(names.len() >= 13, "{names:?}");

    let (ok, out) = run_promtool(&["check", "rules", RULES]);
    assert!(ok, "promtool check rules {RULES}:\n{out}");
    assert!(
        out.contains(&format!("SUCCESS: {} rules found", alerts.len())),
        "{out}"
    );

    let (ok, out) = run_promtool(&["test", "rules", RULE_TESTS]);
    assert!(ok, "promtool test rules {RULE_TESTS}:\n{out}");
    assert!(out.contains("SUCCESS"), "{out}");

    // Each alert is asserted firing somewhere and silent somewhere.
    let tests = yaml(&root().join(RULE_TESTS));
    let checks: Vec<&Value> = tests["tests"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_array().unwrap())
        .collect();
    for name in &names {
        let of = |firing: bool| {
            checks.iter().any(|c| {
                c["alertname"] == *name
                    && c["exp_alerts"]
                        .as_array()
                        .is_some_and(|e| e.is_empty() != firing)
            })
        };
        assert!(of(true), "{name}: no unit test where it fires");
        assert!(of(false), "{name}: no unit test where it stays silent");
    }
}

/// Negative control: with any one alert's expression made never to fire, its unit tests
/// fail, so each alert's firing test checks that very rule.
#[test]
fn each_alerts_unit_test_fails_when_its_rule_never_fires() {
    let rules = yaml(&root().join(RULES));
    let mut tests = yaml(&root().join(RULE_TESTS));
    let dir = tempfile::tempdir().unwrap();
    let broken_rules = dir.path().join("rules.yaml");
    tests["rule_files"] = serde_json::json!([broken_rules]);
    let tests_file = dir.path().join("rules_test.yaml");
    std::fs::write(&tests_file, serde_json::to_string(&tests).unwrap()).unwrap();
    let groups = rules["groups"].as_array().unwrap();
    let mut checked = 0;
    for (g, group) in groups.iter().enumerate() {
        for (r, rule) in group["rules"].as_array().unwrap().iter().enumerate() {
            let mut broken = rules.clone();
            let expr = rule["expr"].as_str().unwrap();
            broken["groups"][g]["rules"][r]["expr"] =
                Value::String(format!("({expr}) and on() vector(0) > 1"));
            std::fs::write(&broken_rules, serde_json::to_string(&broken).unwrap()).unwrap();
            let (ok, out) = run_promtool(&["test", "rules", tests_file.to_str().unwrap()]);
            let name = rule["alert"].as_str().unwrap();
            assert!(
                !ok && out.contains(&format!("alertname: {name},")),
                "{name} never firing still passes its unit tests:\n{out}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, alerts().len());
}

/// Every dashboard query parses as PromQL (promtool checks it as a recording rule), and the
/// rules and the panels group only by labels from small sets: no Workspace in a label.
#[test]
fn dashboard_queries_parse_and_labels_stay_bounded() {
    let queries = dashboard_queries();
    assert!(queries.len() >= 25, "{} queries", queries.len());
    let dir = tempfile::tempdir().unwrap();
    let rules: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(i, (_, expr))| serde_json::json!({"record": format!("dashboard:query_{i}"), "expr": expr}))
        .collect();
    let file = dir.path().join("dashboard-queries.yaml");
    std::fs::write(
        &file,
        serde_json::to_string(
            &serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]}),
        )
        .unwrap(),
    )
    .unwrap();
    let (ok, out) = run_promtool(&["check", "rules", file.to_str().unwrap()]);
    assert!(ok, "a dashboard query does not parse:\n{out}");
    assert!(
        out.contains(&format!("SUCCESS: {} rules found", queries.len())),
        "{out}"
    );

    const BOUNDED: [&str; 12] = [
        "edge",
        "phase",
        "reason",
        "key_id",
        "plan",
        "certificate",
        "endpoint",
        "outcome",
        "verb",
        "le",
        "instance",
        "result",
    ];
    let exprs = alerts()
        .iter()
        .map(|a| a["expr"].as_str().unwrap().to_owned())
        .chain(queries.into_iter().map(|(_, e)| e))
        .collect::<Vec<_>>();
    for expr in &exprs {
        for clause in expr
            .split(" by (")
            .skip(1)
            .chain(expr.split(" on (").skip(1))
        {
            let labels = clause.split(')').next().unwrap();
            for label in labels.split(',').map(str::trim) {
                assert!(
                    BOUNDED.contains(&label),
                    "{expr}: groups by {label:?}, not a bounded label"
                );
            }
        }
    }
}

/// Each alert says what to do: a summary, and a runbook section of its name in
/// docs/operations.md under "### Alerts".
#[test]
fn every_alert_has_a_summary_and_a_runbook_section() {
    let operations = std::fs::read_to_string(root().join("docs/operations.md")).unwrap();
    let alerts_section = operations
        .split("\n### Alerts\n")
        .nth(1)
        .expect("docs/operations.md has a section ### Alerts");
    for alert in alerts() {
        let name = alert["alert"].as_str().unwrap();
        let annotations = &alert["annotations"];
        assert!(
            annotations["summary"]
                .as_str()
                .is_some_and(|s| s.len() > 20),
            "{name}: no summary"
        );
        assert_eq!(
            annotations["runbook"].as_str(),
            Some(format!("docs/operations.md, \"{name}\"").as_str()),
            "{name}"
        );
        assert!(
            alerts_section.contains(&format!("\n#### {name}\n")),
            "docs/operations.md, ### Alerts, has no section #### {name}"
        );
        assert!(
            ["warning", "critical"].contains(&alert["labels"]["severity"].as_str().unwrap()),
            "{name}"
        );
    }
}

/// The PrometheusRule is rules.yaml under its header; the chart ships byte copies of
/// rules.yaml and dashboard.json and renders them, when asked, as the kustomize build of
/// manifests/monitoring does: the same rule groups, the same dashboard, the sidecar's label.
#[test]
fn the_prometheus_rule_the_chart_and_the_kustomize_build_carry_the_same_rules() {
    let root = root();
    let rules_text = std::fs::read_to_string(root.join(RULES)).unwrap();
    let generated = std::fs::read_to_string(root.join(PROMETHEUS_RULE)).unwrap();
    let header: String = generated
        .lines()
        .take(19)
        .map(|l| format!("{l}\n"))
        .collect();
    let indented: String = rules_text.lines().map(|l| format!("  {l}\n")).collect();
    assert!(
        header.ends_with("spec:\n") && generated == format!("{header}{indented}"),
        "{PROMETHEUS_RULE} is not {RULES} under its header: regenerate it as its header says"
    );
    for (copy, original) in [
        ("charts/providers/files/rules.yaml", RULES),
        ("charts/providers/files/dashboard.json", DASHBOARD),
    ] {
        assert!(
            std::fs::read(root.join(copy)).unwrap() == std::fs::read(root.join(original)).unwrap(),
            "{copy} is not a copy of {original}: cp {original} {copy}"
        );
    }
    let rules = yaml(&root.join(RULES));
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(DASHBOARD)).unwrap()).unwrap();

    let out = Command::new("kubectl")
        .args(["kustomize", "manifests/monitoring"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kustomized = documents(&String::from_utf8_lossy(&out.stdout));

    let out = helm(&[
        "template",
        "providers",
        "charts/providers",
        "--namespace",
        "providers-system",
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "monitoring.prometheusRule.enabled=true",
        "--set",
        "monitoring.dashboard.enabled=true",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let charted = documents(&String::from_utf8_lossy(&out.stdout));

    for (source, docs) in [("kustomize", &kustomized), ("chart", &charted)] {
        let rule = docs
            .iter()
            .find(|d| d["kind"] == "PrometheusRule")
            .unwrap_or_else(|| panic!("{source}: no PrometheusRule"));
        assert_eq!(rule["metadata"]["name"], "providers-installer", "{source}");
        assert_eq!(
            rule["metadata"]["namespace"], "providers-system",
            "{source}"
        );
        assert!(
            rule["spec"] == rules,
            "{source}: the PrometheusRule's spec is not {RULES}"
        );
        let config_map = docs
            .iter()
            .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == "providers-dashboard")
            .unwrap_or_else(|| panic!("{source}: no ConfigMap providers-dashboard"));
        assert_eq!(
            config_map["metadata"]["labels"]["grafana_dashboard"], "1",
            "{source}"
        );
        let shipped: Value =
            serde_json::from_str(config_map["data"]["providers.json"].as_str().unwrap()).unwrap();
        assert!(
            shipped == dashboard,
            "{source}: the dashboard is not {DASHBOARD}"
        );
    }

    // helm lint --strict passes with both on.
    let out = helm(&[
        "lint",
        "--strict",
        "charts/providers",
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "monitoring.prometheusRule.enabled=true",
        "--set",
        "monitoring.dashboard.enabled=true",
        "--set",
        "monitoring.dashboard.annotations.grafana_folder=Providers",
    ]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Off by default in the chart.
    let out = helm(&[
        "template",
        "providers",
        "charts/providers",
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
    ]);
    let defaults = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        !defaults.contains("kind: PrometheusRule") && !defaults.contains("providers-dashboard")
    );
}

/// Runs the test control plane's helm in the repository, with a home of its own.
fn helm(args: &[&str]) -> std::process::Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(binaries::path("helm").unwrap())
        .args(args)
        .current_dir(binaries::workspace_root().unwrap())
        .env("HELM_CACHE_HOME", home.path().join("cache"))
        .env("HELM_CONFIG_HOME", home.path().join("config"))
        .env("HELM_DATA_HOME", home.path().join("data"))
        .output()
        .unwrap()
}
