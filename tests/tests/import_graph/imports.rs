//! Which file of a crate names which other file. A file names a module when a `use` tree
//! (groups, `self`, globs and `pub use` included), a path in code or a path in a string
//! starts from `crate`, `super`, `self` or a child module's name. A path names the deepest
//! module of it there is (`a::b` is `a/b.rs` or `a/b/mod.rs`, else `a.rs`, else the root);
//! when the next segment is a name that module imports (`pub use b::Item;` in `a/mod.rs`),
//! the path is followed to where the import points, as the compiler resolves it, so naming
//! `crate::a::Item` depends on `a/b.rs`, not on the facade that re-exports it.
//!
//! A parent's `mod child;` is not an import: declaring a child is not depending on it.
//! Test-only code (a module declared under `#[cfg(test)]`, inline or a file, and all
//! below it) may name what it tests: its edges to code that is not test-only are left out,
//! since nothing outside the tests can name a test module back.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
};

use super::{
    lex::Token,
    modules::{Crate, ModulePath},
};

pub type Edge = (PathBuf, PathBuf);

/// A path as written, and the name a `use` binds it to (`None` for a path in code or a
/// glob).
struct Named {
    path: Vec<String>,
    binds: Option<String>,
}

/// Each module's imported names and the absolute paths they stand for.
type Bindings = BTreeMap<ModulePath, BTreeMap<String, ModulePath>>;

pub fn edges(krate: &Crate) -> BTreeSet<Edge> {
    let mut named = Vec::new();
    for (index, file) in krate.files.iter().enumerate() {
        for_each_path(file.tokens.as_slice(), |at, path| {
            let mut module = file.module.clone();
            module.extend(file.inline[at].iter().cloned());
            named.push((index, at, module, path));
        });
    }
    let mut bindings = Bindings::new();
    for (_, _, module, name) in &named {
        if let Some(binds) = &name.binds
            && let Some(absolute) = absolute(krate, module, &name.path)
        {
            bindings
                .entry(module.clone())
                .or_default()
                .insert(binds.clone(), absolute);
        }
    }
    let mut out = BTreeSet::new();
    for (index, at, module, name) in named {
        let file = &krate.files[index];
        let Some(target) = absolute(krate, &module, &name.path)
            .and_then(|absolute| file_of(krate, &bindings, absolute))
        else {
            continue;
        };
        let target_file = &krate.files[target];
        if target_file.path == file.path || (file.in_test[at] && !target_file.test_only) {
            continue;
        }
        out.insert((file.path.clone(), target_file.path.clone()));
    }
    out
}

/// Calls `found` with each path the tokens name and the index of its first token.
fn for_each_path(tokens: &[Token], mut found: impl FnMut(usize, Named)) {
    let mut i = 0;
    while i < tokens.len() {
        let previous = i.checked_sub(1).map(|k| &tokens[k]);
        let after_path = matches!(previous, Some(Token::PathSep | Token::Punct('.' | '$')));
        match &tokens[i] {
            Token::Ident(word) if word == "use" && !after_path => {
                let mut paths = Vec::new();
                let end = use_tree(tokens, i + 1, Vec::new(), &mut paths);
                for path in paths {
                    found(i, path);
                }
                i = end.max(i + 1);
            }
            Token::Ident(word)
                if !after_path
                    && tokens.get(i + 1) == Some(&Token::PathSep)
                    && !matches!(previous, Some(Token::Ident(p)) if p == "in") =>
            {
                let mut path = vec![word.clone()];
                let mut j = i + 1;
                while tokens.get(j) == Some(&Token::PathSep) {
                    match tokens.get(j + 1) {
                        Some(Token::Ident(next)) => path.push(next.clone()),
                        _ => break,
                    }
                    j += 2;
                }
                found(i, Named { path, binds: None });
                i = j;
            }
            Token::PathString(path) => {
                found(
                    i,
                    Named {
                        path: path.clone(),
                        binds: None,
                    },
                );
                i += 1;
            }
            _ => i += 1,
        }
    }
}

/// Reads a use tree from `i`; pushes every path it names; returns where it ends.
fn use_tree(tokens: &[Token], mut i: usize, prefix: Vec<String>, out: &mut Vec<Named>) -> usize {
    let mut path = prefix;
    let mut glob = false;
    loop {
        match tokens.get(i) {
            Some(Token::PathSep) => i += 1,
            Some(Token::Ident(word)) if word != "as" => {
                path.push(word.clone());
                i += 1;
                if tokens.get(i) != Some(&Token::PathSep) {
                    break;
                }
            }
            Some(Token::Punct('{')) => {
                i += 1;
                while i < tokens.len() && tokens[i] != Token::Punct('}') {
                    let end = use_tree(tokens, i, path.clone(), out);
                    i = if end == i { i + 1 } else { end };
                    if tokens.get(i) == Some(&Token::Punct(',')) {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Some(Token::Punct('*')) => {
                glob = true;
                i += 1;
                break;
            }
            _ => break,
        }
    }
    let mut alias = None;
    if matches!(tokens.get(i), Some(Token::Ident(word)) if word == "as") {
        if let Some(Token::Ident(name)) = tokens.get(i + 1) {
            alias = Some(name.clone());
        }
        i += 2;
    }
    // `a::{self}` names (and binds) `a`.
    if path.len() > 1 && path.last().is_some_and(|last| last == "self") {
        path.pop();
    }
    if !path.is_empty() {
        let binds = if glob {
            None
        } else {
            alias
                .or_else(|| path.last().cloned())
                .filter(|name| name != "_")
        };
        out.push(Named { path, binds });
    }
    i
}

/// The absolute path (from the crate root) a path written in `module` stands for, or
/// `None` when it is not this crate's (another crate, a type's associated item).
fn absolute(krate: &Crate, module: &ModulePath, path: &[String]) -> Option<ModulePath> {
    let (first, rest) = path.split_first()?;
    let mut full: ModulePath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.clone(),
        "super" => {
            let mut base = module.clone();
            base.pop();
            base
        }
        name => {
            let mut child = module.clone();
            child.push(name.to_string());
            if !krate.modules.contains_key(&child) {
                return None;
            }
            child
        }
    };
    let mut rest = rest.iter().peekable();
    while rest.peek().is_some_and(|segment| *segment == "super") {
        rest.next();
        full.pop();
    }
    full.extend(rest.cloned());
    Some(full)
}

/// The index of the file an absolute path names, through the imports it passes.
fn file_of(krate: &Crate, bindings: &Bindings, mut full: ModulePath) -> Option<usize> {
    // A bound limit: two modules importing a name from each other would loop (the compiler
    // refuses that, but this reads text, not checked code).
    for _ in 0..16 {
        let depth = (0..=full.len())
            .rev()
            .find(|&len| krate.modules.contains_key(&full[..len]))?;
        let imported = full
            .get(depth)
            .and_then(|name| bindings.get(&full[..depth])?.get(name));
        match imported {
            Some(target) if *target != full[..=depth] => {
                let mut next = target.clone();
                next.extend(full[depth + 1..].iter().cloned());
                full = next;
            }
            _ => return krate.modules.get(&full[..depth]).copied(),
        }
    }
    None
}
