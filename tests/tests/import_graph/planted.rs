//! The check on crates written here: it finds a planted circle (the negative control) and
//! reads each way of naming a file as the rules say.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use super::{
    circles::circles,
    imports::edges,
    lex::tokens,
    modules::{has_path_attribute, load_crate},
};

/// The edges of a crate whose root is `src/lib.rs`, from `(path, text)` pairs.
fn edges_of(files: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    let files: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(path, text)| (PathBuf::from(path), text.to_string()))
        .collect();
    let read = |path: &Path| files.get(path).cloned();
    edges(&load_crate(Path::new("src/lib.rs"), &read))
        .into_iter()
        .map(|(from, to)| (from.display().to_string(), to.display().to_string()))
        .collect()
}

fn edge(from: &str, to: &str) -> (String, String) {
    (from.to_string(), to.to_string())
}

#[test]
fn a_planted_circle_is_found_with_its_edges() {
    let found = edges_of(&[
        ("src/lib.rs", "mod a; mod b; mod c; mod d;"),
        ("src/a.rs", "use crate::b::Thing;"),
        ("src/b.rs", "pub struct Thing; fn f() { crate::c::g(); }"),
        ("src/c.rs", "use super::{d, a::{self}};"),
        ("src/d.rs", "pub fn h() {}"),
    ]);
    let expected = BTreeSet::from([
        edge("src/a.rs", "src/b.rs"),
        edge("src/b.rs", "src/c.rs"),
        edge("src/c.rs", "src/a.rs"),
        edge("src/c.rs", "src/d.rs"),
    ]);
    assert_eq!(found, expected);
    let as_paths = found
        .iter()
        .map(|(from, to)| (PathBuf::from(from), PathBuf::from(to)))
        .collect();
    let found = circles(&as_paths);
    assert_eq!(found.len(), 1, "one circle");
    let files: Vec<String> = found[0]
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    assert_eq!(files, ["src/a.rs", "src/b.rs", "src/c.rs"]);
    assert_eq!(found[0].edges.len(), 3, "d is outside the circle");
}

#[test]
fn an_acyclic_graph_has_no_circle() {
    let found = edges_of(&[
        ("src/lib.rs", "pub mod a; pub mod b;"),
        ("src/a.rs", "use crate::b;"),
        ("src/b.rs", ""),
    ]);
    let as_paths = found
        .iter()
        .map(|(from, to)| (PathBuf::from(from), PathBuf::from(to)))
        .collect();
    assert!(circles(&as_paths).is_empty());
}

/// `quiet` names `Item` through the root, which re-exports it: the edge goes to the file
/// that defines it.
#[test]
fn declaring_a_child_is_not_an_import_and_a_re_export_is_followed() {
    let found = edges_of(&[
        ("src/lib.rs", "mod quiet; mod loud; pub use loud::Item;"),
        ("src/quiet.rs", "use super::Item;"),
        ("src/loud.rs", "pub struct Item;"),
    ]);
    assert_eq!(
        found,
        BTreeSet::from([
            edge("src/lib.rs", "src/loud.rs"),
            edge("src/quiet.rs", "src/loud.rs"),
        ])
    );
}

#[test]
fn an_item_path_names_the_deepest_module_there_is() {
    let found = edges_of(&[
        ("src/lib.rs", "mod a; mod user;"),
        ("src/a/mod.rs", "pub mod b; pub struct Top;"),
        ("src/a/b.rs", "pub struct Deep;"),
        (
            "src/user.rs",
            "fn f() -> crate::a::b::Deep { todo!() } fn g(_: crate::a::Top) {}",
        ),
    ]);
    assert_eq!(
        found,
        BTreeSet::from([
            edge("src/user.rs", "src/a/b.rs"),
            edge("src/user.rs", "src/a/mod.rs"),
        ])
    );
}

#[test]
fn an_inline_test_module_naming_its_file_is_no_edge() {
    let found = edges_of(&[
        ("src/lib.rs", "mod a; mod b;"),
        (
            "src/a.rs",
            "use crate::b::B; #[cfg(test)] mod tests { use super::*; use super::super::b; }",
        ),
        ("src/b.rs", "pub struct B;"),
    ]);
    assert_eq!(found, BTreeSet::from([edge("src/a.rs", "src/b.rs")]));
}

#[test]
fn children_of_a_file_live_in_its_directory_and_inline_modules_nest() {
    let found = edges_of(&[
        ("src/lib.rs", "mod a;"),
        ("src/a.rs", "mod b; pub mod inner { mod c; }"),
        ("src/a/b.rs", "use super::inner::c::C;"),
        (
            "src/a/inner/c.rs",
            "pub struct C; fn f() { self::super::super::b::g() }",
        ),
    ]);
    assert!(
        found.contains(&edge("src/a/b.rs", "src/a/inner/c.rs")),
        "{found:?}"
    );
}

#[test]
fn strings_comments_and_other_crates_name_nothing_but_a_path_string_does() {
    let found = edges_of(&[
        ("src/lib.rs", "mod a; mod b; mod c;"),
        (
            "src/a.rs",
            r#"// use crate::b;
            use std::collections::BTreeMap; use serde::Serialize;
            const S: &str = "crate::b is a module";
            #[serde(deserialize_with = "crate::c::read")] struct X;"#,
        ),
        ("src/b.rs", ""),
        ("src/c.rs", "pub fn read() {}"),
    ]);
    assert_eq!(found, BTreeSet::from([edge("src/a.rs", "src/c.rs")]));
}

#[test]
fn pub_use_globs_renames_and_bare_child_paths_are_imports() {
    let found = edges_of(&[
        ("src/lib.rs", "mod a; mod b; mod c; mod d;"),
        ("src/a.rs", "pub use crate::b::*;"),
        ("src/b.rs", "pub(crate) use crate::c::Thing as Other;"),
        ("src/c.rs", "pub struct Thing; mod e; fn f() { e::g(); }"),
        ("src/c/e.rs", "pub fn g() {}"),
        ("src/d.rs", "pub(in crate::a) fn h() {}"),
    ]);
    assert_eq!(
        found,
        BTreeSet::from([
            edge("src/a.rs", "src/b.rs"),
            edge("src/b.rs", "src/c.rs"),
            edge("src/c.rs", "src/c/e.rs"),
        ])
    );
}

#[test]
fn a_path_attribute_is_seen() {
    assert!(has_path_attribute(&tokens(
        r#"#[path = "elsewhere.rs"] mod a;"#
    )));
    assert!(!has_path_attribute(&tokens(
        "#[cfg(test)] mod tests; fn path() {}"
    )));
}
