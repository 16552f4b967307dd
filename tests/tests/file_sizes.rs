//! Small files: no production file of `webhook/src`, `webhook/admission/src`,
//! `webhook/installer/src`, `webhook/edge-watch/src`, `webhook/runtime-support/src`,
//! `shared/src`, `shared/generators/src` or `plugin/src` is over 400 lines before its
//! tests. A file past that does more than one job; it is split by
//! job (one job per file, a name that says it), not by line count.
//!
//! Counted: the lines before the file's inline test module (a `#[cfg(test)]` line followed
//! by `mod <name> {`), or every line when its tests are in a file of their own. A
//! `#[cfg(test)]` helper among the production items is counted with them. Exempt: test
//! files, named `tests.rs` or under a `tests/` folder.
//!
//! Run alone: `cargo test -p providers-tests --test file_sizes`.

use std::path::{Path, PathBuf};

use providers_tests::binaries;

/// The most lines a production file may have before its tests.
const MAX_LINES: usize = 400;

/// The source folders checked, relative to the workspace.
const SOURCES: [&str; 8] = [
    "webhook/src",
    "webhook/admission/src",
    "webhook/installer/src",
    "webhook/edge-watch/src",
    "webhook/runtime-support/src",
    "shared/src",
    "shared/generators/src",
    "plugin/src",
];

/// The lines of `text` before its inline test module, or all of them when it has none.
fn lines_before_tests(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .position(|pair| pair[0].trim() == "#[cfg(test)]" && opens_a_module(pair[1]))
        .unwrap_or(lines.len())
}

/// Whether `line` opens an inline module: `mod x {`, `pub(super) mod x {`, ...
fn opens_a_module(line: &str) -> bool {
    let line = line.trim();
    let line = match line.strip_prefix("pub") {
        Some(rest) => rest
            .trim_start_matches(|c| c != ' ')
            .trim_start()
            .to_owned(),
        None => line.to_owned(),
    };
    line.strip_prefix("mod ")
        .is_some_and(|rest| rest.trim_end().ends_with('{'))
}

/// Whether `path` (relative to its source folder) holds tests: `tests.rs`, or a file under
/// a `tests/` folder.
fn is_tests(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "tests.rs")
        || path.components().any(|part| part.as_os_str() == "tests")
}

/// The production files of `files` (`(path relative to its source folder, text)`) over
/// [`MAX_LINES`] before their tests, with their counts.
fn too_long<'a>(files: impl IntoIterator<Item = (&'a Path, &'a str)>) -> Vec<(PathBuf, usize)> {
    files
        .into_iter()
        .filter(|(path, _)| !is_tests(path))
        .map(|(path, text)| (path.to_path_buf(), lines_before_tests(text)))
        .filter(|(_, lines)| *lines > MAX_LINES)
        .collect()
}

#[test]
fn no_production_file_is_over_400_lines_before_its_tests() {
    let root = binaries::workspace_root().expect("the workspace's root");
    let mut found = Vec::new();
    for source in SOURCES {
        let folder = root.join(source);
        let files: Vec<(PathBuf, String)> = binaries::rust_files(&folder)
            .into_iter()
            .map(|file| {
                let text = std::fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                (file.strip_prefix(&folder).unwrap().to_path_buf(), text)
            })
            .collect();
        assert!(!files.is_empty(), "{source} has Rust files");
        let long = too_long(
            files
                .iter()
                .map(|(path, text)| (path.as_path(), text.as_str())),
        );
        found.extend(
            long.into_iter()
                .map(|(path, lines)| (Path::new(source).join(path), lines)),
        );
    }
    assert!(
        found.is_empty(),
        "{} production file(s) over {MAX_LINES} lines before their tests; split each by job \
         (one job per file, a name that says it), not by line count:\n{}",
        found.len(),
        found
            .iter()
            .map(|(path, lines)| format!("  {}: {lines} lines", path.display()))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A file of `lines` lines of code, then an inline test module.
fn planted(lines: usize) -> String {
    let mut text = "fn f() {}\n".repeat(lines);
    text.push_str("\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n");
    text
}

#[test]
fn a_file_of_401_lines_before_its_tests_is_named_and_one_of_400_is_not() {
    let (at, over) = (planted(MAX_LINES - 1), planted(MAX_LINES));
    // With the blank line before `#[cfg(test)]`: 400 and 401 lines.
    assert_eq!(lines_before_tests(&at), MAX_LINES);
    assert_eq!(lines_before_tests(&over), MAX_LINES + 1);
    let found = too_long([
        (Path::new("controller/at.rs"), at.as_str()),
        (Path::new("controller/over.rs"), over.as_str()),
    ]);
    assert_eq!(
        found,
        [(PathBuf::from("controller/over.rs"), MAX_LINES + 1)]
    );
}

#[test]
fn test_files_are_exempt_and_a_file_without_inline_tests_counts_whole() {
    let long = "fn f() {}\n".repeat(MAX_LINES + 1);
    assert!(
        too_long([
            (Path::new("installer/tests.rs"), long.as_str()),
            (Path::new("installer/tests/attempts.rs"), long.as_str()),
        ])
        .is_empty()
    );
    // Its tests in a file of their own: every line is production code, a `#[cfg(test)]`
    // helper among them too.
    let mut helper = "#[cfg(test)]\npub(super) fn insert() {}\n".to_owned();
    helper.push_str(&long);
    helper.push_str("#[cfg(test)]\nmod tests;\n");
    assert_eq!(lines_before_tests(&helper), MAX_LINES + 5);
    // An inline test module of any visibility ends the count.
    assert_eq!(
        lines_before_tests("fn f() {}\n#[cfg(test)]\npub(crate) mod tests {\n}\n"),
        1
    );
}
