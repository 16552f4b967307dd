use providers_shared::seal::Sealer;
use serde_json::Value;

use super::*;
use crate::testdata;

const OLD: &str = "0123456789abcdef";
const NEW: &str = "fedcba9876543210";

/// Workspace `namespace/name` whose current plan is attempt `attempt` sealed with `key`,
/// with `status` as the installer wrote it.
fn workspace(namespace: &str, name: &str, attempt: i64, key: &str, status: Value) -> Workspace {
    let mut raw = testdata::workspace_json(status);
    raw["metadata"]["namespace"] = json!(namespace);
    raw["metadata"]["name"] = json!(name);
    let mut plan = testdata::plan_json(attempt);
    plan["seal"]["keyID"] = json!(key);
    raw["spec"]["plan"] = plan;
    serde_json::from_value(raw).unwrap()
}

/// A succeeded attempt record, keeping its plan sealed with `key`.
fn kept(attempt: i64, key: &str) -> Value {
    let mut plan = testdata::plan_json(attempt);
    plan["seal"]["keyID"] = json!(key);
    json!({"attempt": attempt, "attemptID": format!("att-{attempt}"), "version": "6.5.0",
           "owner": "alice", "job": format!("podinfo-demo-{attempt}"), "result": "Succeeded",
           "kept": {"plan": plan}})
}

fn running(attempt: i64, attempts: Vec<Value>) -> Value {
    json!({"phase": "Progressing", "attempt": attempt, "job": format!("podinfo-demo-{attempt}"),
           "attempts": attempts})
}

fn failed(attempt: i64) -> Value {
    json!({"phase": "Failed", "attempt": attempt, "jobResult": "Failed",
           "attempts": [{"attempt": attempt, "attemptID": format!("att-{attempt}"),
                         "version": "6.5.0", "owner": "alice", "job": "j", "result": "Failed"}]})
}

/// org-a/web runs attempt 2 with the new key and keeps attempt 1's plan, sealed with the
/// old one; org-b/db failed attempt 1, sealed with the old key.
fn fleet() -> Vec<Workspace> {
    vec![
        workspace("org-b", "db", 1, OLD, failed(1)),
        workspace("org-a", "web", 2, NEW, running(2, vec![kept(1, OLD)])),
    ]
}

fn published(ids: &[&str]) -> Published {
    Published::Read {
        ids: ids.iter().map(|id| (*id).to_owned()).collect(),
        problems: Vec::new(),
    }
}

#[test]
fn current_and_kept_plans_are_live_with_their_keys() {
    let plans = live_plans(&fleet());
    let seen: Vec<(&str, &str, i64, Held, &str, &str)> = plans
        .iter()
        .map(|p| {
            (
                p.namespace.as_str(),
                p.name.as_str(),
                p.attempt,
                p.held,
                p.key_id.as_str(),
                p.phase,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("org-a", "web", 1, Held::Kept, OLD, "Succeeded"),
            ("org-a", "web", 2, Held::Current, NEW, "Progressing"),
            ("org-b", "db", 1, Held::Current, OLD, "Failed"),
        ]
    );
}

#[test]
fn a_workspace_without_a_plan_or_kept_plans_holds_nothing() {
    let mut ws = workspace("org-a", "w", 1, OLD, json!({}));
    ws.spec.plan = None;
    assert!(live_plans(&[ws]).is_empty());
    // Failed and running attempts keep no plan: only a succeeded one does.
    let ws = workspace("org-a", "w", 1, OLD, failed(1));
    assert_eq!(live_plans(&[ws]).len(), 1);
}

#[test]
fn the_table_counts_workspaces_and_kept_plans_per_key_with_published_ones() {
    let third = "00000000000000aa";
    let rows = key_rows(&live_plans(&fleet()), &published(&[OLD, NEW, third]));
    let rendered = key_list(&rows, &Scope::All);
    assert_eq!(
        rendered.table,
        "\
KEY ID             WORKSPACES   KEPT   PUBLISHED
00000000000000aa   0            0      yes
0123456789abcdef   1            1      yes
fedcba9876543210   1            0      yes
"
    );
    assert_eq!(
        rendered.data["keys"][1],
        json!({"keyID": OLD, "workspaces": 1, "kept": 1, "published": true})
    );
    assert_eq!(rendered.names, [third, OLD, NEW]);
    // Unreadable: every key's publication is unknown, and only used keys are listed.
    let rows = key_rows(
        &live_plans(&fleet()),
        &Published::Unknown("forbidden".into()),
    );
    let rendered = key_list(&rows, &Scope::All);
    assert!(
        rendered
            .table
            .contains("0123456789abcdef   1            1      unknown"),
        "{}",
        rendered.table
    );
    assert_eq!(rendered.data["keys"][0]["published"], Value::Null);
    assert_eq!(rows.len(), 2);
    // Retired: the old key still seals plans but is not published.
    let rows = key_rows(&live_plans(&fleet()), &published(&[NEW]));
    assert_eq!(
        rows[0],
        KeyRow {
            key_id: OLD.into(),
            workspaces: 1,
            kept: 1,
            published: Some(false)
        }
    );
}

#[test]
fn a_key_in_use_is_refused_retirement_naming_its_plans() {
    let plans = live_plans(&fleet());
    let of_old: Vec<&LivePlan> = plans.iter().filter(|p| p.key_id == OLD).collect();
    let rendered = in_use_list(OLD, &of_old, Some(true), &Scope::All);
    assert_eq!(
        rendered.table,
        "\
NAMESPACE   NAME   ATTEMPT   PLAN      PHASE
org-a       web    1         kept      Succeeded
org-b       db     1         current   Failed
"
    );
    assert_eq!(
        rendered.data["plans"][1],
        json!({"namespace": "org-b", "name": "db", "attempt": 1, "plan": "current", "phase": "Failed"})
    );
    let (message, hint) = retirement(OLD, &of_old, &Scope::All).unwrap();
    assert_eq!(
        message,
        "key 0123456789abcdef still seals 2 live plans in any namespace (1 current Failed, 1 kept for rollback): do not retire it yet"
    );
    assert!(
        hint.contains("kubectl provider retry") && hint.contains("rollback"),
        "{hint}"
    );
    // One namespace: no NAMESPACE column, and the message says where it looked.
    let in_a: Vec<&LivePlan> = of_old
        .iter()
        .copied()
        .filter(|p| p.namespace == "org-a")
        .collect();
    let scope = Scope::Namespace("org-a".into());
    assert!(
        in_use_list(OLD, &in_a, Some(true), &scope)
            .table
            .starts_with("NAME   ATTEMPT")
    );
    assert!(
        retirement(OLD, &in_a, &scope)
            .unwrap()
            .0
            .contains("1 live plan in namespace org-a (1 kept")
    );
}

#[test]
fn a_key_no_plan_uses_may_be_retired_when_every_namespace_was_read() {
    assert_eq!(retirement(OLD, &[], &Scope::All), None);
    let all = in_use_list(OLD, &[], Some(true), &Scope::All);
    assert_eq!(all.table, "");
    assert_eq!(
        all.empty.as_deref(),
        Some(
            "No live plan in any namespace is sealed with key 0123456789abcdef: it may leave the keys ConfigMap."
        )
    );
    assert_eq!(
        all.data,
        json!({"keyID": OLD, "published": true, "plans": []})
    );
    let one = in_use_list(OLD, &[], Some(false), &Scope::Namespace("org-a".into()));
    let note = one.empty.unwrap_or_default();
    assert!(
        note.contains("Only namespace org-a was read: run with -A"),
        "{note}"
    );
    assert!(
        note.contains("It is not published either: check the ID"),
        "{note}"
    );
}

#[test]
fn key_ids_are_sixteen_hex_digits() {
    assert_eq!(parse_key_id(" 0123456789ABCDEF"), Ok(OLD.to_owned()));
    for wrong in [
        "",
        "0123456789abcde",
        "0123456789abcdefa",
        "0123456789abcdeg",
    ] {
        assert!(
            parse_key_id(wrong)
                .unwrap_err()
                .contains("is not a sealing key ID"),
            "{wrong}"
        );
    }
    assert!(
        parse_key_id("0123456789abcdef.pem")
            .unwrap_err()
            .contains("without .pem")
    );
}

#[test]
fn published_keys_are_known_by_the_id_of_their_key() {
    let (one, two) = (Sealer::from_seed([1; 32]), Sealer::from_seed([2; 32]));
    let (one_pem, two_pem) = (one.public_key_pem(), two.public_key_pem());
    let good = format!("{}.pem", one.key_id());
    let misnamed = format!("{OLD}.pem");
    let entries = [
        (good.as_str(), one_pem.as_str()),
        (misnamed.as_str(), two_pem.as_str()),
        ("README", "not a key, not an entry"),
        (
            "broken.pem",
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        ),
    ];
    let Published::Read { ids, problems } = publication("providers-system/keys", entries) else {
        panic!("read")
    };
    assert_eq!(
        ids,
        [one.key_id().to_owned(), two.key_id().to_owned()].into()
    );
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains(&format!("holds the public key {}, not {OLD}", two.key_id())),
        "{problems:?}"
    );
    assert!(
        problems[1].contains("entry broken.pem is not a usable public key"),
        "{problems:?}"
    );
}
