//! The API requests a kube-apiserver has served, from its `apiserver_request_total`
//! counter: what the scale benchmarks divide by the item count to get reads and writes per
//! item.
//!
//! Counted: resource requests only (a non-empty `resource` label), without watches (the
//! server reports `WATCH` and the legacy `WATCHLIST` as `WATCH`) and without `leases`
//! (leader election and the API server's own identity leases are a steady background, not
//! work per item). Reads are `GET` and `LIST`; writes are `POST`, `PUT`, `PATCH`, `APPLY`
//! (a server-side apply patch), `DELETE` and `DELETECOLLECTION` (and `CREATE`/`UPDATE`,
//! which the server does not emit today but lists as valid). `CONNECT` and `PROXY` are
//! neither. A dry run (`dry_run` label set: the content check's Secret tests) stores nothing
//! and counts as a read, under its verb and ` DRYRUN`. Every response code counts: a refused
//! or conflicting request was still served.
//!
//! The counter includes the benchmark's own requests; [`OwnRequests`] counts those on the
//! client side so they can be subtracted.

use std::{
    collections::BTreeMap,
    fmt,
    sync::atomic::{AtomicU64, Ordering},
};

use anyhow::Context;
use kube::Client;

/// The metric counted.
pub const METRIC: &str = "apiserver_request_total";

/// The verbs counted as reads.
pub const READ_VERBS: &[&str] = &["GET", "LIST"];

/// The verbs counted as writes.
pub const WRITE_VERBS: &[&str] = &[
    "POST",
    "PUT",
    "PATCH",
    "APPLY",
    "DELETE",
    "DELETECOLLECTION",
    "CREATE",
    "UPDATE",
];

/// How a dry run's verb is counted (`PATCH DRYRUN`): a read, as it stores nothing.
const DRY_RUN: &str = " DRYRUN";

/// Whether a request of `verb` is a read, a write, or neither.
fn kind(verb: &str) -> Option<Kind> {
    let dry_run = verb
        .strip_suffix(DRY_RUN)
        .is_some_and(|v| WRITE_VERBS.contains(&v));
    if dry_run || READ_VERBS.contains(&verb) {
        Some(Kind::Read)
    } else if WRITE_VERBS.contains(&verb) {
        Some(Kind::Write)
    } else {
        None
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
}

/// A snapshot of the counted requests, by verb and resource (`resource` or
/// `resource/subresource`, with the group: `jobs.batch/status`), and of those answered
/// with an error (a code of 400 or more: a conflict, a missing object).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestCounts {
    counts: BTreeMap<(String, String), u64>,
    failed: BTreeMap<(String, String), u64>,
}

impl RequestCounts {
    /// Scrapes `/metrics` of the API server that `client` talks to (the client must be
    /// allowed to read the non-resource URL `/metrics`: the admin user is).
    pub async fn scrape(client: &Client) -> anyhow::Result<Self> {
        let request = http::Request::get("/metrics").body(Vec::new())?;
        let text = client
            .request_text(request)
            .await
            .context("reading the API server's /metrics")?;
        Ok(Self::parse(&text))
    }

    /// The sum of the scrapes of several API servers.
    pub async fn scrape_all(clients: &[Client]) -> anyhow::Result<Self> {
        let mut total = Self::default();
        for client in clients {
            total.add(&Self::scrape(client).await?);
        }
        Ok(total)
    }

    /// The counted samples of `apiserver_request_total` in a Prometheus text exposition.
    pub fn parse(text: &str) -> Self {
        let mut counts = BTreeMap::new();
        let mut failed = BTreeMap::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix(METRIC) else {
                continue;
            };
            let Some(rest) = rest.strip_prefix('{') else {
                continue;
            };
            let Some((labels, rest)) = split_labels(rest) else {
                continue;
            };
            let Some(value) = rest
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
            else {
                continue;
            };
            let label = |name: &str| {
                labels
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.as_str())
                    .unwrap_or_default()
            };
            let (verb, resource) = (label("verb"), label("resource"));
            // A dry run (the content check's Secret tests) stores nothing: a read.
            let verb = match label("dry_run") {
                "" => verb.to_owned(),
                _ => format!("{verb}{DRY_RUN}"),
            };
            let verb = verb.as_str();
            if resource.is_empty() || resource == "leases" || kind(verb).is_none() {
                continue;
            }
            let mut name = resource.to_owned();
            if !label("group").is_empty() {
                name = format!("{name}.{}", label("group"));
            }
            if !label("subresource").is_empty() {
                name = format!("{name}/{}", label("subresource"));
            }
            let n = value.round() as u64;
            if label("code").parse::<u16>().is_ok_and(|code| code >= 400) {
                *failed.entry((verb.to_owned(), name.clone())).or_insert(0) += n;
            }
            *counts.entry((verb.to_owned(), name)).or_insert(0) += n;
        }
        Self { counts, failed }
    }

    /// Adds another snapshot's counts (of another API server).
    pub fn add(&mut self, other: &Self) {
        for (key, n) in &other.counts {
            *self.counts.entry(key.clone()).or_insert(0) += n;
        }
        for (key, n) in &other.failed {
            *self.failed.entry(key.clone()).or_insert(0) += n;
        }
    }

    /// The requests served since `before` (a counter never decreases while the server
    /// runs; a key that did is taken as zero).
    pub fn delta(&self, before: &Self) -> Self {
        fn minus(
            now: &BTreeMap<(String, String), u64>,
            was: &BTreeMap<(String, String), u64>,
        ) -> BTreeMap<(String, String), u64> {
            now.iter()
                .map(|(key, n)| {
                    (
                        key.clone(),
                        n.saturating_sub(was.get(key).copied().unwrap_or(0)),
                    )
                })
                .filter(|(_, n)| *n > 0)
                .collect()
        }
        Self {
            counts: minus(&self.counts, &before.counts),
            failed: minus(&self.failed, &before.failed),
        }
    }

    /// GET and LIST requests.
    pub fn reads(&self) -> u64 {
        self.sum(Kind::Read)
    }

    /// POST, PUT, PATCH, APPLY, DELETE and DELETECOLLECTION requests.
    pub fn writes(&self) -> u64 {
        self.sum(Kind::Write)
    }

    /// The count for one verb and resource (`"LIST"`, `"secrets"`; `"PATCH"`,
    /// `"jobs.batch/status"`).
    pub fn get(&self, verb: &str, resource: &str) -> u64 {
        self.counts
            .get(&(verb.to_owned(), resource.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// How many of the requests for one verb and resource failed (code 400 or more).
    pub fn failed(&self, verb: &str, resource: &str) -> u64 {
        self.failed
            .get(&(verb.to_owned(), resource.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// How many of the writes failed.
    pub fn failed_writes(&self) -> u64 {
        self.failed
            .iter()
            .filter(|((verb, _), _)| kind(verb) == Some(Kind::Write))
            .map(|(_, n)| n)
            .sum()
    }

    fn sum(&self, wanted: Kind) -> u64 {
        self.counts
            .iter()
            .filter(|((verb, _), _)| kind(verb) == Some(wanted))
            .map(|(_, n)| n)
            .sum()
    }
}

/// One `verb resource count` per line, the largest first, with the failed ones.
impl fmt::Display for RequestCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rows: Vec<_> = self.counts.iter().collect();
        rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for ((verb, resource), n) in rows {
            write!(f, "  {verb:<16} {resource:<48} {n:>7}")?;
            match self.failed(verb, resource) {
                0 => writeln!(f)?,
                failed => writeln!(f, " ({failed} failed)")?,
            }
        }
        Ok(())
    }
}

/// The labels of a sample (`name="value",...}`) and the text after the closing brace.
fn split_labels(text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches([',', ' ']);
        if let Some(after) = rest.strip_prefix('}') {
            return Some((labels, after));
        }
        let (name, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (_, c) => value.push(c),
            }
        };
        labels.push((name.trim().to_owned(), value));
        rest = &after[end + 1..];
    }
}

/// The requests a benchmark makes itself, counted where it makes them, to subtract from
/// the API servers' counts. Count only requests that [`RequestCounts`] counts: resource
/// reads (get, list) and writes, not watches.
#[derive(Debug, Default)]
pub struct OwnRequests {
    reads: AtomicU64,
    writes: AtomicU64,
}

impl OwnRequests {
    pub const fn new() -> Self {
        Self {
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        }
    }

    /// One GET or LIST.
    pub fn read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    /// One create, update, patch or delete.
    pub fn write(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 12
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 3
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="batch",resource="jobs",scope="resource",subresource="",verb="POST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="batch",resource="jobs",scope="resource",subresource="status",verb="PATCH",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="helm.cattle.io",resource="helmcharts",scope="resource",subresource="status",verb="PUT",version="v1"} 1e+01
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="APPLY",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="namespace",subresource="",verb="DELETECOLLECTION",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="DELETE",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="batch",resource="jobs",scope="cluster",subresource="",verb="WATCH",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="GET",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/healthz",verb="GET",version=""} 50
apiserver_request_total{code="101",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="exec",verb="CONNECT",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="namespace",subresource="",verb="LIST",version="v1"} 6 1712345678000
apiserver_request_total{code="200",component="ap\"i\\server",dry_run="",group="",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} 2
apiserver_request_duration_seconds_count{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 999
"#;

    #[test]
    fn sums_reads_and_writes_without_watches_leases_and_non_resource_requests() {
        let counts = RequestCounts::parse(SAMPLE);
        // 12 + 3 + 2 configmap reads, 6 secret lists.
        assert_eq!(counts.reads(), 23);
        // 5 POST jobs, 4 PATCH jobs/status, 10 PUT helmcharts/status, 1 APPLY, 1
        // DELETECOLLECTION, 2 DELETE, 2 POST events.
        assert_eq!(counts.writes(), 25);
        assert_eq!(counts.get("GET", "configmaps"), 5);
        assert_eq!(counts.get("PATCH", "jobs.batch/status"), 4);
        assert_eq!(counts.get("PUT", "helmcharts.helm.cattle.io/status"), 10);
        assert_eq!(counts.get("LIST", "secrets"), 6);
        assert_eq!(counts.get("POST", "events"), 2);
        assert_eq!(counts.get("PUT", "leases.coordination.k8s.io"), 0);
        assert_eq!(counts.get("WATCH", "jobs.batch"), 0);
        assert_eq!(counts.failed("GET", "configmaps"), 2);
        assert_eq!(counts.failed_writes(), 0);
        assert!(counts.to_string().contains("(2 failed)"));
    }

    #[test]
    fn a_dry_run_is_a_read() {
        let counts = RequestCounts::parse(
            r#"apiserver_request_total{code="422",component="apiserver",dry_run="All",group="",resource="secrets",scope="resource",subresource="",verb="PATCH",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="PATCH",version="v1"} 1
"#,
        );
        assert_eq!((counts.reads(), counts.writes()), (3, 1));
        assert_eq!(counts.get("PATCH DRYRUN", "secrets"), 3);
    }

    #[test]
    fn delta_and_sum() {
        let before = RequestCounts::parse(SAMPLE);
        let after = RequestCounts::parse(
            &SAMPLE
                .replace(
                    r#"verb="LIST",version="v1"} 12"#,
                    r#"verb="LIST",version="v1"} 20"#,
                )
                .replace(
                    r#"verb="POST",version="v1"} 5"#,
                    r#"verb="POST",version="v1"} 9"#,
                ),
        );
        let delta = after.delta(&before);
        assert_eq!((delta.reads(), delta.writes()), (8, 4));
        assert_eq!(delta.get("LIST", "configmaps"), 8);
        assert_eq!(before.delta(&before), RequestCounts::default());
        let mut two = before.clone();
        two.add(&before);
        assert_eq!((two.reads(), two.writes()), (46, 50));
        assert!(delta.to_string().contains("LIST"));
    }

    #[test]
    fn own_requests() {
        let own = OwnRequests::new();
        own.read();
        own.read();
        own.write();
        assert_eq!((own.reads(), own.writes()), (2, 1));
    }
}
