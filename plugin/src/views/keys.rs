//! `kubectl provider keys`: which sealing keys the live plans are sealed with, and whether
//! the platform publishes each; with `--in-use KEYID`, the plans one key still seals and
//! whether it may leave the keys ConfigMap. Plain functions from Workspaces and the
//! ConfigMap's entries.
//!
//! A plan is live while a Workspace holds it, because each is verified again with the
//! published keys before it is used: the current plan (`spec.plan`) by the installer before
//! it runs it, and by the webhook before a retry or a repair seals it anew; a kept plan
//! (`status.attempts[].kept`) by the webhook before a rollback seals it anew (ADR 11, 27).

use std::collections::{BTreeMap, BTreeSet};

use kube::ResourceExt;
use providers_shared::{api::Workspace, seal::Keyring};
use serde_json::{Value, json};

use crate::{
    attempt_state::state,
    output::Rendered,
    table::{Table, col},
};

/// Where a Workspace holds a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Held {
    /// `spec.plan`: the attempt that runs, or the one a retry or a repair seals again.
    Current,
    /// `status.attempts[].kept`: a succeeded attempt's plan, which a rollback seals again.
    Kept,
}

impl Held {
    pub fn word(self) -> &'static str {
        match self {
            Held::Current => "current",
            Held::Kept => "kept",
        }
    }
}

/// A live plan and the key that sealed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LivePlan {
    pub namespace: String,
    pub name: String,
    pub attempt: i64,
    pub held: Held,
    pub key_id: String,
    /// Where the attempt stands: the current attempt's phase (`Progressing`, `Failed`, ...);
    /// a kept plan's attempt succeeded.
    pub phase: &'static str,
}

/// Every live plan of `workspaces`, by namespace, name, attempt, current before kept.
pub fn live_plans(workspaces: &[Workspace]) -> Vec<LivePlan> {
    let mut plans = Vec::new();
    for ws in workspaces {
        let (namespace, name) = (ws.namespace().unwrap_or_default(), ws.name_any());
        if let Some(sealed) = &ws.spec.plan {
            plans.push(LivePlan {
                namespace: namespace.clone(),
                name: name.clone(),
                attempt: sealed.plan.attempt,
                held: Held::Current,
                key_id: sealed.seal.key_id.clone(),
                phase: state(ws).label(),
            });
        }
        for record in ws.status.iter().flat_map(|status| &status.attempts) {
            if let Some(kept) = &record.kept {
                plans.push(LivePlan {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    attempt: record.attempt,
                    held: Held::Kept,
                    key_id: kept.plan.seal.key_id.clone(),
                    phase: "Succeeded",
                });
            }
        }
    }
    plans.sort_by(|a, b| {
        (&a.namespace, &a.name, a.attempt, a.held).cmp(&(&b.namespace, &b.name, b.attempt, b.held))
    });
    plans
}

/// What the keys ConfigMap publishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Published {
    /// The key IDs of its public keys, computed from the keys as the installer and the
    /// webhook do (an entry's name is not trusted), and what is wrong with its entries.
    Read {
        ids: BTreeSet<String>,
        problems: Vec<String>,
    },
    /// It could not be read: why.
    Unknown(String),
}

impl Published {
    /// Whether `key_id` is published; `None` when the ConfigMap could not be read.
    pub fn has(&self, key_id: &str) -> Option<bool> {
        match self {
            Published::Read { ids, .. } => Some(ids.contains(key_id)),
            Published::Unknown(_) => None,
        }
    }
}

/// The keys published by the entries of ConfigMap `configmap` (`<keyID>.pem`; other
/// entries are not keys). An entry that holds no public key, or the key of another ID than
/// its name, is a problem: the installer refuses the whole ConfigMap for the first, and
/// an operator deleting the entry by its name would delete another key for the second.
pub fn publication<'a>(
    configmap: &str,
    entries: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Published {
    let mut ids = BTreeSet::new();
    let mut problems = Vec::new();
    for (entry, pem) in entries {
        let Some(named) = entry.strip_suffix(".pem") else {
            continue;
        };
        match Keyring::from_pems([(entry, pem)]) {
            Ok(ring) => {
                for id in ring.key_ids() {
                    if id != named {
                        problems.push(format!(
                            "configmap {configmap}: entry {entry} holds the public key {id}, not {named}: name it {id}.pem"
                        ));
                    }
                    ids.insert(id.to_owned());
                }
            }
            Err(error) => problems.push(format!(
                "configmap {configmap}: entry {entry} is not a usable public key ({error}); \
                 the installer verifies no plan while the ConfigMap holds it: fix or remove it"
            )),
        }
    }
    Published::Read { ids, problems }
}

/// Where the Workspaces were read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    Namespace(String),
    All,
}

impl Scope {
    /// The namespace to list in; `None` for every namespace.
    pub fn namespace(&self) -> Option<&str> {
        match self {
            Scope::Namespace(namespace) => Some(namespace),
            Scope::All => None,
        }
    }

    fn words(&self) -> String {
        match self {
            Scope::Namespace(namespace) => format!("in namespace {namespace}"),
            Scope::All => "in any namespace".to_owned(),
        }
    }
}

/// A key ID as typed after `--in-use`: 16 hex digits (what `providers-webhook keygen`
/// prints and a seal's `keyID` holds), in lower case as seals write it.
pub fn parse_key_id(text: &str) -> Result<String, String> {
    let id = text.trim();
    if id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(id.to_ascii_lowercase());
    }
    let hint = if id.ends_with(".pem") {
        ": the ID is the ConfigMap entry's name without .pem"
    } else {
        ""
    };
    Err(format!(
        "{text:?} is not a sealing key ID, which is 16 hex digits (the output of providers-webhook \
         keygen; kubectl provider keys -A lists them){hint}"
    ))
}

/// One line of `kubectl provider keys`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRow {
    pub key_id: String,
    /// Workspaces whose current plan the key sealed.
    pub workspaces: usize,
    /// Kept plans it sealed.
    pub kept: usize,
    pub published: Option<bool>,
}

/// Every key that seals a live plan or is published, by key ID.
pub fn key_rows(plans: &[LivePlan], published: &Published) -> Vec<KeyRow> {
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for plan in plans {
        let count = counts.entry(plan.key_id.as_str()).or_default();
        match plan.held {
            Held::Current => count.0 += 1,
            Held::Kept => count.1 += 1,
        }
    }
    if let Published::Read { ids, .. } = published {
        for id in ids {
            counts.entry(id.as_str()).or_default();
        }
    }
    counts
        .into_iter()
        .map(|(key_id, (workspaces, kept))| KeyRow {
            key_id: key_id.to_owned(),
            workspaces,
            kept,
            published: published.has(key_id),
        })
        .collect()
}

fn published_word(published: Option<bool>) -> &'static str {
    match published {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    }
}

/// The keys table. YAML and JSON give `{keys: [{keyID, workspaces, kept, published}]}`,
/// `published` null when the ConfigMap could not be read.
pub fn key_list(rows: &[KeyRow], scope: &Scope) -> Rendered {
    let mut table = Table::new(&[
        col("KEY ID"),
        col("WORKSPACES"),
        col("KEPT"),
        col("PUBLISHED"),
    ]);
    for row in rows {
        table.push(vec![
            row.key_id.clone(),
            row.workspaces.to_string(),
            row.kept.to_string(),
            published_word(row.published).to_owned(),
        ]);
    }
    let items: Vec<Value> = rows
        .iter()
        .map(|row| {
            json!({
                "keyID": row.key_id, "workspaces": row.workspaces, "kept": row.kept,
                "published": row.published,
            })
        })
        .collect();
    Rendered {
        data: json!({ "keys": items }),
        table: table.render(false),
        wide: table.render(true),
        names: rows.iter().map(|row| row.key_id.clone()).collect(),
        empty: Some(format!(
            "No plan {} is sealed, and no key is known to be published.",
            scope.words()
        )),
        headers: true,
        rows_at: Some("keys"),
    }
}

/// The live plans sealed with `key_id` (`plans` holds only those). YAML and JSON give
/// `{keyID, published, plans: [{namespace, name, attempt, plan, phase}]}`.
pub fn in_use_list(
    key_id: &str,
    plans: &[&LivePlan],
    published: Option<bool>,
    scope: &Scope,
) -> Rendered {
    let all = *scope == Scope::All;
    let mut columns = Vec::new();
    if all {
        columns.push(col("NAMESPACE"));
    }
    columns.extend([col("NAME"), col("ATTEMPT"), col("PLAN"), col("PHASE")]);
    let mut table = Table::new(&columns);
    for plan in plans {
        let mut row = Vec::new();
        if all {
            row.push(plan.namespace.clone());
        }
        row.extend([
            plan.name.clone(),
            plan.attempt.to_string(),
            plan.held.word().to_owned(),
            plan.phase.to_owned(),
        ]);
        table.push(row);
    }
    let items: Vec<Value> = plans
        .iter()
        .map(|plan| {
            json!({
                "namespace": plan.namespace, "name": plan.name, "attempt": plan.attempt,
                "plan": plan.held.word(), "phase": plan.phase,
            })
        })
        .collect();
    Rendered {
        data: json!({ "keyID": key_id, "published": published, "plans": items }),
        table: table.render(false),
        wide: table.render(true),
        names: Vec::new(),
        empty: Some(unused_note(key_id, published, scope)),
        headers: true,
        rows_at: Some("plans"),
    }
}

/// What is said when no live plan read uses the key.
fn unused_note(key_id: &str, published: Option<bool>, scope: &Scope) -> String {
    let mut note = format!("No live plan {} is sealed with key {key_id}", scope.words());
    match scope {
        Scope::All => note.push_str(": it may leave the keys ConfigMap."),
        Scope::Namespace(namespace) => note.push_str(&format!(
            ". Only namespace {namespace} was read: run with -A before retiring the key."
        )),
    }
    if published == Some(false) {
        note.push_str(
            " It is not published either: check the ID (kubectl provider keys -A lists them).",
        );
    }
    note
}

/// Whether `key_id` may be retired, judged from the live plans it seals: nothing to say
/// when none, otherwise the refusal (message, what to do).
pub fn retirement(key_id: &str, plans: &[&LivePlan], scope: &Scope) -> Option<(String, String)> {
    if plans.is_empty() {
        return None;
    }
    let mut phases: BTreeMap<&str, usize> = BTreeMap::new();
    let mut kept = 0;
    for plan in plans {
        match plan.held {
            Held::Current => *phases.entry(plan.phase).or_default() += 1,
            Held::Kept => kept += 1,
        }
    }
    let mut parts: Vec<String> = phases
        .iter()
        .map(|(phase, n)| format!("{n} current {phase}"))
        .collect();
    if kept > 0 {
        parts.push(format!("{kept} kept for rollback"));
    }
    let count = plans.len();
    let noun = if count == 1 { "plan" } else { "plans" };
    let message = format!(
        "key {key_id} still seals {count} live {noun} {} ({}): do not retire it yet",
        scope.words(),
        parts.join(", ")
    );
    let hint = "each is verified with the published keys before it runs or is sealed again. \
                An attempt in progress finishes with it; a failed one is sealed with the new key \
                by kubectl provider retry or a changed intent; a succeeded one by its next changed \
                intent; a kept plan by a rollback, and it is dropped once newer attempts succeed \
                (the installer keeps --rollback-history). Run this again then"
        .to_owned();
    Some((message, hint))
}

#[cfg(test)]
mod tests;
