//! The docs name only what exists. A doc that names a file, a system test or a flag the
//! code no longer has sends its reader to nothing; this test fails on each such name,
//! saying the doc file, the line, the name and what to do.
//!
//! Read: README.md and docs/**/*.md, except
//! - docs/history/, which records past measurements as they were, with the names of the
//!   day;
//! - docs/adr/, the decision records and their index: a record is the past (what was
//!   decided, and why, when it was), is not rewritten when code moves, and names files
//!   and flags that have since moved or gone; checking them would make keeping history
//!   wrong. The index (docs/adr/README.md) is kept with the records it indexes.
//!
//! Checked, in backticked spans (`...`) and in the command lines of fenced `sh` blocks:
//! - (a) a repository path (starting `webhook/`, `shared/`, `plugin/`, `tests/`,
//!   `manifests/`, `charts/`, `docs/` or `.ci/`) exists in the tree. Paths relative to a
//!   folder named before them (`edge_cache/follow.rs` after `webhook/src/controller/`)
//!   are not resolved, nor are placeholders (`<name>`, `*`, `{a,b}`).
//! - (b) `module::test_name`, where `module` is a file or folder of `tests/tests/`, names
//!   a `fn` of that file or folder (`module::prefix_*` one that starts so; a module between
//!   them is a file of the folder or a `mod` of the file). A unit test,
//!   `path::tests::name` (`plan_values::tests::*`, `server::callers::tests::*`), names a
//!   module of `shared/src`, `webhook/src`, `webhook/admission/src`,
//!   `webhook/installer/src`, `webhook/edge-watch/src`, `webhook/runtime-support/src` or
//!   `plugin/src` whose path ends so, and a `fn` in it or its tests.
//! - (c) a `--flag` given to our binaries (`providers-webhook ...`, `kubectl provider
//!   ...`, `kubectl-provider`, the test bed's and the benchmarks' binaries, or a bare
//!   `--flag`) is a clap argument of `webhook/src/`, `webhook/runtime-support/src/` (the
//!   hub client's), `plugin/src/`, `tests/src/bin/` or `tests/benches/` (clap's
//!   `--foo-bar` from a field `foo_bar`, unless `long = "..."` says otherwise). A span
//!   that starts with another tool (`kubectl get`, `helm`, `cargo`, `go`, ...) carries
//!   that tool's flags and is not checked; a bare flag of another tool is in
//!   `OTHER_TOOLS_FLAGS`. A paragraph that says a flag was removed (`removed`, `earlier
//!   version`, `no longer`) may name it.
//!
//! Run alone: `cargo test -p providers-tests --test docs_names`.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

use providers_tests::binaries;

/// The folders a repository path in the docs starts with.
const TOP_FOLDERS: [&str; 8] = [
    "webhook/",
    "shared/",
    "plugin/",
    "tests/",
    "manifests/",
    "charts/",
    "docs/",
    ".ci/",
];

/// Commands whose flags are not ours: a span or command line that starts with one of these
/// (after `VAR=value` assignments) is that tool's.
const OTHER_TOOLS: [&str; 22] = [
    "kubectl",
    "helm",
    "cargo",
    "go",
    "curl",
    "git",
    "hyperfine",
    "taskset",
    "nice",
    "heaptrack",
    "perf",
    "kube-apiserver",
    "etcd",
    "promtool",
    "yq",
    "jq",
    "openssl",
    "docker",
    "flux",
    "argocd",
    "python3",
    "rm",
];

/// Flags of other tools that the docs name bare, with the tool in the prose around them.
const OTHER_TOOLS_FLAGS: [&str; 14] = [
    // kube-apiserver
    "--admission-control-config-file",
    "--http2-max-streams-per-connection",
    // kubectl and helm
    "--server-side",
    "--force-conflicts",
    "--dry-run",
    "--for",
    "--reuse-values",
    "--create-namespace",
    "--replicas",
    "--labels",
    "--install",
    "--atomic",
    // cargo
    "--locked",
    "--release",
];

/// Words that say a paragraph tells of something gone: it may name a removed flag.
const HISTORY_WORDS: [&str; 4] = ["removed", "earlier version", "no longer", "was gone"];

fn workspace() -> PathBuf {
    binaries::workspace_root().expect("the workspace's root")
}

/// The docs this test reads, as paths relative to the workspace.
fn docs(root: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::from("README.md")];
    let mut folders = vec![PathBuf::from("docs")];
    while let Some(folder) = folders.pop() {
        if folder == Path::new("docs/history") || folder == Path::new("docs/adr") {
            continue;
        }
        let mut entries: Vec<PathBuf> = fs::read_dir(root.join(&folder))
            .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
            .map(|entry| folder.join(entry.unwrap().file_name()))
            .collect();
        entries.sort();
        for entry in entries {
            if root.join(&entry).is_dir() {
                folders.push(entry);
            } else if entry.extension().is_some_and(|e| e == "md") {
                found.push(entry);
            }
        }
    }
    found
}

/// A piece of a doc to check: a backticked span or a command line of a fenced block.
struct Piece {
    line: usize,
    text: String,
    /// The paragraph it stands in, for the words around a flag.
    paragraph: String,
}

/// The backticked spans outside fenced blocks, and the lines of fenced `sh` blocks.
fn pieces(text: &str) -> Vec<Piece> {
    let lines: Vec<&str> = text.lines().collect();
    // Each line's paragraph: the lines between blank lines, fences apart.
    let mut paragraph_of = vec![String::new(); lines.len()];
    let mut start = 0;
    for i in 0..=lines.len() {
        if i == lines.len()
            || lines[i].trim().is_empty()
            || lines[i].trim_start().starts_with("```")
        {
            let paragraph = lines[start..i].join(" ").to_lowercase();
            for slot in &mut paragraph_of[start..i] {
                slot.clone_from(&paragraph);
            }
            start = i + 1;
        }
    }
    let mut found = Vec::new();
    // The prose, with fenced blocks blanked, as one text so spans may wrap lines.
    let mut prose = String::new();
    let mut fence: Option<String> = None;
    // In a fenced block, the first words of a command a `\` continues: whose flags they are.
    let mut continued: Option<String> = None;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(rest.trim().to_string()),
            };
            prose.push('\n');
            continue;
        }
        match &fence {
            Some(language) => {
                if matches!(language.as_str(), "sh" | "bash" | "console" | "") {
                    let text = match &continued {
                        Some(head) => format!("{head} {trimmed}"),
                        None => trimmed.trim_start_matches("| ").to_string(),
                    };
                    continued = trimmed.ends_with('\\').then(|| {
                        continued.clone().unwrap_or_else(|| {
                            text.split_whitespace()
                                .take(2)
                                .collect::<Vec<_>>()
                                .join(" ")
                        })
                    });
                    found.push(Piece {
                        line: i + 1,
                        text,
                        paragraph: paragraph_of[i].clone(),
                    });
                }
                prose.push('\n');
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    let bytes = prose.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'`' {
            at += 1;
            continue;
        }
        let run = bytes[at..].iter().take_while(|&&b| b == b'`').count();
        let open = at + run;
        let mut close = open;
        let mut end = None;
        while close < bytes.len() {
            if bytes[close] == b'`' {
                let n = bytes[close..].iter().take_while(|&&b| b == b'`').count();
                if n == run {
                    end = Some(close);
                    break;
                }
                close += n;
            } else if bytes[close] == b'\n' && bytes.get(close + 1) == Some(&b'\n') {
                break;
            } else {
                close += 1;
            }
        }
        match end {
            Some(end) => {
                let line = prose[..at].matches('\n').count();
                found.push(Piece {
                    line: line + 1,
                    text: prose[open..end]
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                    paragraph: paragraph_of.get(line).cloned().unwrap_or_default(),
                });
                at = end + run;
            }
            None => at = open,
        }
    }
    found
}

/// A word of a span, without the punctuation prose puts around it.
fn bare(word: &str) -> &str {
    word.trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']' | '"' | '\'' | ',' | ';' | '.'))
        .trim_end_matches(':')
}

/// (a) The repository paths of a piece that do not exist.
fn missing_paths(root: &Path, piece: &Piece) -> Vec<String> {
    let mut missing = Vec::new();
    for word in piece.text.split_whitespace() {
        let word = bare(word);
        let word = word.split_once('=').map_or(word, |(_, value)| value);
        if !TOP_FOLDERS.iter().any(|top| word.starts_with(top)) {
            continue;
        }
        if word.contains(['<', '>', '*', '{', '}', '$', '…']) || word.contains("...") {
            continue;
        }
        // `path:line` and `path#anchor` name the file.
        let path = word.split(['#', ':']).next().unwrap_or(word);
        if !root.join(path).exists() {
            missing.push(path.to_string());
        }
    }
    missing
}

/// The system test modules: files and folders of tests/tests/.
fn test_modules(root: &Path) -> BTreeSet<String> {
    fs::read_dir(root.join("tests/tests"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir() || path.extension().is_some_and(|e| e == "rs"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// (b) The `module::test` references of a piece whose test does not exist.
fn missing_tests(root: &Path, modules: &BTreeSet<String>, piece: &Piece) -> Vec<String> {
    let mut missing = Vec::new();
    for word in piece.text.split_whitespace() {
        let word = bare(word).trim_end_matches("()");
        let segments: Vec<&str> = word
            .split("::")
            .skip_while(|s| {
                matches!(
                    *s,
                    "crate"
                        | "providers_shared"
                        | "providers_runtime"
                        | "providers_admission"
                        | "providers_installer"
                        | "providers_webhook"
                )
            })
            .collect();
        let name_ok = |s: &&str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '*')
        };
        if segments.len() < 2 || !segments.iter().all(name_ok) {
            continue;
        }
        let unit = segments[1..]
            .iter()
            .position(|s| *s == "tests")
            .map(|k| k + 1);
        let sources = match unit {
            Some(k) => unit_test_sources(root, &segments[..k]),
            None if modules.contains(segments[0]) => {
                let module = root.join("tests/tests").join(segments[0]);
                if module.is_dir() {
                    binaries::rust_files(&module)
                } else {
                    vec![module.with_extension("rs")]
                }
            }
            None => continue,
        };
        // What follows the module (or `tests`): modules, then the test or a pattern.
        let rest = &segments[unit.map_or(1, |k| k + 1)..];
        if !sources.is_empty() && names_exist(&sources, rest) {
            continue;
        }
        missing.push(word.to_string());
    }
    missing
}

/// The files a unit test of the module at `path` (`["server", "callers"]`) can be in: the
/// module's own file and its `tests.rs` or `tests/`, in any crate whose module path ends so.
fn unit_test_sources(root: &Path, path: &[&str]) -> Vec<PathBuf> {
    let wanted = path.join("/");
    let mut sources = Vec::new();
    for krate in [
        "shared/src",
        "webhook/src",
        "webhook/admission/src",
        "webhook/installer/src",
        "webhook/edge-watch/src",
        "webhook/runtime-support/src",
        "plugin/src",
    ] {
        let src = root.join(krate);
        for file in binaries::rust_files(&src) {
            let relative = file.strip_prefix(&src).unwrap().with_extension("");
            let relative = relative.to_string_lossy().replace('\\', "/");
            let module = relative.strip_suffix("/mod").unwrap_or(&relative);
            if module == wanted || module.ends_with(&format!("/{wanted}")) {
                sources.push(file.clone());
                sources.extend(binaries::rust_files(
                    &src.join(format!("{module}/tests.rs")),
                ));
                sources.extend(binaries::rust_files(&src.join(format!("{module}/tests"))));
            }
        }
    }
    sources
}

/// Whether `names` (modules, then a test or a pattern with `*`) are in these files: each
/// module a `mod` or a file of its name, the last a `fn` or `mod`. None: the files exist.
fn names_exist(files: &[PathBuf], names: &[&str]) -> bool {
    let Some((last, modules)) = names.split_last() else {
        return true;
    };
    let mut items = BTreeSet::new();
    for file in files {
        if let Some(stem) = file.file_stem() {
            items.insert(stem.to_string_lossy().into_owned());
        }
        let source = fs::read_to_string(file).unwrap();
        for word in ["fn ", "mod "] {
            for (at, _) in source.match_indices(word) {
                let name: String = source[at + word.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                items.insert(name);
            }
        }
    }
    modules.iter().all(|m| items.contains(*m)) && items.iter().any(|item| glob(last, item))
}

/// `pattern` with `*` for any text matches `name`.
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || !name[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The long flags clap derives from the Rust files under `paths`.
fn clap_flags(root: &Path, paths: &[&str]) -> BTreeSet<String> {
    // clap gives every command these.
    let mut flags: BTreeSet<String> = ["--help", "--version"].map(String::from).into();
    for path in paths {
        for file in binaries::rust_files(&root.join(path)) {
            let source = fs::read_to_string(&file).unwrap();
            let mut attribute = String::new();
            let mut open = false;
            for line in source.lines() {
                let line = line.trim();
                if open || line.starts_with("#[arg(") || line.starts_with("#[clap(") {
                    attribute.push_str(line);
                    attribute.push(' ');
                    open = !line.ends_with(")]");
                    continue;
                }
                if attribute.is_empty() || line.starts_with("///") || line.starts_with("#[") {
                    continue;
                }
                // The field the attribute belongs to.
                let field = line
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub ")
                    .split(':')
                    .next()
                    .unwrap_or("")
                    .trim();
                if let Some(long) = long_name(&attribute, field) {
                    flags.insert(format!("--{long}"));
                }
                for alias in quoted_after(&attribute, "alias") {
                    flags.insert(format!("--{alias}"));
                }
                attribute.clear();
            }
        }
    }
    flags
}

/// The long name of an argument: `long = "x"`, or `long` alone and the field's name.
fn long_name(attribute: &str, field: &str) -> Option<String> {
    if let Some(explicit) = quoted_after(attribute, "long").into_iter().next() {
        return Some(explicit);
    }
    let inner = attribute.split_once('(')?.1;
    let has_long = inner
        .split([',', '(', ')'])
        .any(|part| part.trim() == "long");
    (has_long && !field.is_empty()).then(|| field.replace('_', "-"))
}

/// The quoted values of `key = "value"` in an attribute (`alias`, `visible_alias`, ...).
fn quoted_after(attribute: &str, key: &str) -> Vec<String> {
    let mut values = Vec::new();
    for part in attribute.split(',') {
        let part = part
            .trim()
            .trim_start_matches("#[arg(")
            .trim_start_matches("#[clap(");
        if let Some((name, value)) = part.split_once('=') {
            let name = name.trim();
            if name == key || name == format!("visible_{key}") {
                let value = value.trim().trim_end_matches(")]").trim();
                if let Some(value) = value.strip_prefix('"').and_then(|v| v.split('"').next()) {
                    values.push(value.to_string());
                }
            }
        }
    }
    values
}

/// Which flags a piece's flags are checked against: ours, or none (another tool's).
enum Owner {
    Ours,
    OtherTool,
}

fn owner(text: &str) -> Owner {
    let mut words = text
        .split_whitespace()
        .skip_while(|w| w.contains('=') && !w.starts_with('-'));
    let Some(first) = words.next() else {
        return Owner::OtherTool;
    };
    let first = first.trim_start_matches("./");
    if first == "kubectl" && words.next() == Some("provider") {
        return Owner::Ours;
    }
    let first = first.rsplit('/').next().unwrap_or(first);
    if OTHER_TOOLS.contains(&first) || first.ends_with(".sh") || first.ends_with(".py") {
        // Our scripts (demo.sh aside) take no flags the docs name; a tool's are its own.
        if first == "demo.sh" {
            return Owner::Ours;
        }
        return Owner::OtherTool;
    }
    Owner::Ours
}

/// (c) The flags of a piece that none of our binaries has.
fn missing_flags(ours: &BTreeSet<String>, piece: &Piece) -> Vec<String> {
    if matches!(owner(&piece.text), Owner::OtherTool) {
        return Vec::new();
    }
    if HISTORY_WORDS.iter().any(|w| piece.paragraph.contains(w)) {
        return Vec::new();
    }
    let mut missing = Vec::new();
    for word in piece.text.split_whitespace() {
        let word = bare(word);
        let Some(name) = word.strip_prefix("--") else {
            continue;
        };
        let name = name.split(['=', '[']).next().unwrap_or(name);
        if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
            continue;
        }
        let flag = format!("--{name}");
        if !ours.contains(&flag) && !OTHER_TOOLS_FLAGS.contains(&flag.as_str()) {
            missing.push(flag);
        }
    }
    missing
}

/// Every failure of the docs, one line each.
fn failures(root: &Path) -> Vec<String> {
    let modules = test_modules(root);
    let ours = clap_flags(
        root,
        &[
            "webhook/src",
            "webhook/runtime-support/src",
            "plugin/src",
            "tests/src/bin",
            "tests/benches",
        ],
    );
    assert!(
        ours.contains("--drift-interval") && ours.contains("--all-namespaces"),
        "the flags of webhook/src/cli.rs and plugin/src were not found: {ours:?}"
    );
    let mut failures = Vec::new();
    for doc in docs(root) {
        let text = fs::read_to_string(root.join(&doc)).unwrap();
        for piece in pieces(&text) {
            let at = format!("{}:{}", doc.display(), piece.line);
            for path in missing_paths(root, &piece) {
                failures.push(format!(
                    "{at}: `{path}` does not exist: name the file as it is now, or the module by its role"
                ));
            }
            for test in missing_tests(root, &modules, &piece) {
                failures.push(format!(
                    "{at}: `{test}`: no such system test (tests/tests/) or unit test (shared, webhook, plugin): name the test that checks it, or drop the reference"
                ));
            }
            for flag in missing_flags(&ours, &piece) {
                failures.push(format!(
                    "{at}: `{flag}` is not a flag of providers-webhook, kubectl-provider or the test bed: \
                     name the flag as it is now; a removed flag only in a paragraph that says so; \
                     another tool's flag in a span that starts with the tool, or in OTHER_TOOLS_FLAGS of tests/tests/docs_names.rs"
                ));
            }
        }
    }
    failures
}

#[test]
fn the_docs_name_only_files_tests_and_flags_that_exist() {
    let failures = failures(&workspace());
    assert!(
        failures.is_empty(),
        "{} name(s) in the docs that the code does not have:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The checks fail where they should: on a made-up doc in a throwaway tree.
#[test]
fn a_made_up_name_of_each_kind_fails() {
    let root = workspace();
    let piece = |text: &str, paragraph: &str| Piece {
        line: 1,
        text: text.to_string(),
        paragraph: paragraph.to_string(),
    };
    assert_eq!(
        missing_paths(&root, &piece("webhook/src/no_such_file.rs", "")),
        ["webhook/src/no_such_file.rs"]
    );
    assert!(missing_paths(&root, &piece("webhook/src/cli.rs", "")).is_empty());
    let modules = test_modules(&root);
    assert_eq!(
        missing_tests(&root, &modules, &piece("day_two::no_such_test", "")),
        ["day_two::no_such_test"]
    );
    assert!(missing_tests(&root, &modules, &piece("docs_names::a_made_up_*", "")).is_empty());
    assert_eq!(
        missing_tests(&root, &modules, &piece("admission::no_such_module::*", "")),
        ["admission::no_such_module::*"]
    );
    assert_eq!(
        missing_tests(&root, &modules, &piece("plan_values::tests::no_such_*", "")),
        ["plan_values::tests::no_such_*"]
    );
    assert!(missing_tests(&root, &modules, &piece("plan_values::tests::*", "")).is_empty());
    let ours = clap_flags(&root, &["webhook/src", "plugin/src"]);
    assert_eq!(
        missing_flags(
            &ours,
            &piece("providers-webhook controller --no-such-flag", "")
        ),
        ["--no-such-flag"]
    );
    assert!(missing_flags(&ours, &piece("--no-such-flag", "it was removed")).is_empty());
    assert!(missing_flags(&ours, &piece("kubectl get pods --no-such-flag", "")).is_empty());
    assert!(missing_flags(&ours, &piece("kubectl provider status --wait", "")).is_empty());
}
