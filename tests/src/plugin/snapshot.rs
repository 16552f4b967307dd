//! Snapshot files for the plugin's table output (tests/snapshots/plugin/<name>.txt), and
//! making output stable enough to compare.

use std::path::PathBuf;

use anyhow::{Context, bail};

/// The snapshot folder: tests/snapshots/plugin.
pub fn snapshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots/plugin")
}

/// Compares `actual` with the snapshot file `<name>.txt`. With `UPDATE_SNAPSHOTS=1`
/// the file is (re)written instead, and the test passes; review the diff before keeping it.
pub fn check_snapshot(name: &str, actual: &str) -> anyhow::Result<()> {
    let path = snapshot_dir().join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(snapshot_dir())?;
        std::fs::write(&path, actual)?;
        return Ok(());
    }
    let expected = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "snapshot {} is missing: run with UPDATE_SNAPSHOTS=1 to write it",
            path.display()
        )
    })?;
    if expected != actual {
        bail!(
            "output differs from snapshot {} (run with UPDATE_SNAPSHOTS=1 to accept it):\n{}",
            path.display(),
            line_diff(&expected, actual)
        );
    }
    Ok(())
}

/// The lines that differ, `-` expected and `+` actual.
fn line_diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut out = String::new();
    for i in 0..e.len().max(a.len()) {
        match (e.get(i), a.get(i)) {
            (Some(x), Some(y)) if x == y => out.push_str(&format!("  {x}\n")),
            (x, y) => {
                if let Some(x) = x {
                    out.push_str(&format!("- {x}\n"));
                }
                if let Some(y) = y {
                    out.push_str(&format!("+ {y}\n"));
                }
            }
        }
    }
    out
}

/// Makes output stable: replaces each `(from, to)` and ages (`12s`, `3m`, `1h5m`) at the end
/// of a line with `<age>`.
pub fn normalize(text: &str, replacements: &[(&str, &str)]) -> String {
    let mut text = text.to_owned();
    for (from, to) in replacements {
        if !from.is_empty() {
            text = text.replace(from, to);
        }
    }
    let mut out = String::new();
    for line in text.lines() {
        match line.rsplit_once(' ') {
            Some((head, last)) if is_age(last) => {
                out.push_str(head);
                out.push_str(" <age>");
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// `5s`, `12m`, `3h`, `2d`, `1m30s`, `2h5m`.
fn is_age(word: &str) -> bool {
    let mut rest = word;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let Some(unit) = rest.chars().next().filter(|c| "smhd".contains(*c)) else {
            return false;
        };
        rest = &rest[unit.len_utf8()..];
        parts += 1;
    }
    (1..=2).contains(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_at_line_ends_are_masked() {
        assert_eq!(
            normalize("NAME   AGE\nweb    12s\nold    1h5m\nkeep   v1\n", &[]),
            "NAME   AGE\nweb    <age>\nold    <age>\nkeep   v1\n"
        );
    }

    #[test]
    fn replacements_apply_first() {
        assert_eq!(normalize("uid 1234\n", &[("1234", "<uid>")]), "uid <uid>\n");
    }
}
