//! The module tree of one crate, read from its root file by following `mod name;`
//! declarations (no file outside that tree belongs to the crate). A module is `dir/name.rs`
//! or `dir/name/mod.rs`; an inline `mod name { ... }` is a module of the file it is written
//! in, so a path to it names that file. `#[path]` attributes are not followed; the check
//! refuses a file that has one ([`has_path_attribute`]).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use super::lex::{Token, tokens};

/// A module path from the crate root (`["controller", "edges"]`); the root is empty.
pub type ModulePath = Vec<String>;

pub struct SourceFile {
    pub path: PathBuf,
    /// The module the file is.
    pub module: ModulePath,
    pub tokens: Vec<Token>,
    /// For each token, the inline modules it is written in, from the file's own module.
    pub inline: Vec<ModulePath>,
    /// Whether the file is compiled for unit tests only (declared under `#[cfg(test)]`,
    /// or below such a module).
    pub test_only: bool,
    /// For each token, whether it is in test-only code (the file, or an inline module
    /// declared under `#[cfg(test)]`).
    pub in_test: Vec<bool>,
}

pub struct Crate {
    pub files: Vec<SourceFile>,
    /// Every module, inline ones included, and the index of the file it is written in.
    pub modules: BTreeMap<ModulePath, usize>,
}

/// Reads a file's text; `None` when there is no such file.
pub type Read<'a> = &'a dyn Fn(&Path) -> Option<String>;

pub fn load_crate(root: &Path, read: Read) -> Crate {
    let mut krate = Crate {
        files: Vec::new(),
        modules: BTreeMap::new(),
    };
    let Some(text) = read(root) else {
        return krate;
    };
    let root = Declared {
        path: root.to_path_buf(),
        module: Vec::new(),
        is_root: true,
        test_only: false,
    };
    load_file(&mut krate, root, &text, read);
    krate
}

struct Declared {
    path: PathBuf,
    module: ModulePath,
    is_root: bool,
    test_only: bool,
}

fn load_file(krate: &mut Crate, file: Declared, text: &str, read: Read) {
    let Declared {
        path,
        module,
        is_root,
        test_only,
    } = file;
    let tokens = tokens(text);
    let (inline, in_test) = inline_modules(&tokens, test_only);
    let index = krate.files.len();
    krate.modules.insert(module.clone(), index);
    for scope in &inline {
        let mut full = module.clone();
        full.extend(scope.iter().cloned());
        krate.modules.entry(full).or_insert(index);
    }
    // Children of `a/b.rs` live in `a/b/`; of a crate root or a `mod.rs`, beside it.
    let own_dir = if is_root || path.file_name().is_some_and(|name| name == "mod.rs") {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        path.with_extension("")
    };
    let declared = declared_children(&tokens, &inline, &in_test);
    krate.files.push(SourceFile {
        path,
        module: module.clone(),
        tokens,
        inline,
        test_only,
        in_test,
    });
    for (scope, name, child_test_only) in declared {
        let dir = scope
            .iter()
            .fold(own_dir.clone(), |dir, part| dir.join(part));
        let candidates = [
            dir.join(format!("{name}.rs")),
            dir.join(&name).join("mod.rs"),
        ];
        for candidate in candidates {
            if let Some(text) = read(&candidate) {
                let mut child = module.clone();
                child.extend(scope.iter().cloned());
                child.push(name.clone());
                let child = Declared {
                    path: candidate,
                    module: child,
                    is_root: false,
                    test_only: child_test_only,
                };
                load_file(krate, child, &text, read);
                break;
            }
        }
    }
}

/// For each token, the stack of inline `mod name { ... }` blocks around it, and whether
/// it is test-only code.
fn inline_modules(tokens: &[Token], file_test_only: bool) -> (Vec<ModulePath>, Vec<bool>) {
    let mut out = Vec::with_capacity(tokens.len());
    let mut in_test = Vec::with_capacity(tokens.len());
    let mut depth = 0usize;
    // Each open inline module: its name, the depth it opened at, whether it is test-only.
    let mut open: Vec<(String, usize, bool)> = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::Punct('{') => {
                if let (Some(Token::Ident(keyword)), Some(Token::Ident(name))) = (
                    i.checked_sub(2).map(|k| &tokens[k]),
                    i.checked_sub(1).map(|k| &tokens[k]),
                ) && keyword == "mod"
                {
                    open.push((name.clone(), depth, under_cfg_test(tokens, i - 2)));
                }
                depth += 1;
            }
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if open.last().is_some_and(|(_, at, _)| *at == depth) {
                    open.pop();
                }
            }
            _ => {}
        }
        out.push(open.iter().map(|(name, _, _)| name.clone()).collect());
        in_test.push(file_test_only || open.iter().any(|(_, _, test)| *test));
    }
    (out, in_test)
}

/// Whether the item whose keyword (`mod`) is at `at` carries `#[cfg(test)]` among its
/// attributes (written before its visibility).
fn under_cfg_test(tokens: &[Token], at: usize) -> bool {
    let cfg_test = [
        Token::Ident("cfg".into()),
        Token::Punct('('),
        Token::Ident("test".into()),
        Token::Punct(')'),
    ];
    let mut end = at;
    // Visibility: `pub`, `pub(crate)`, `pub(super)`, `pub(in path)`.
    if end > 0
        && tokens[end - 1] == Token::Punct(')')
        && let Some(open) = tokens[..end].iter().rposition(|t| *t == Token::Punct('('))
    {
        end = open;
    }
    if end > 0 && tokens[end - 1] == Token::Ident("pub".into()) {
        end -= 1;
    }
    while end > 0 && tokens[end - 1] == Token::Punct(']') {
        let Some(open) = tokens[..end].iter().rposition(|t| *t == Token::Punct('[')) else {
            return false;
        };
        if tokens[open + 1..end - 1] == cfg_test {
            return true;
        }
        if open == 0 || tokens[open - 1] != Token::Punct('#') {
            return false;
        }
        end = open - 1;
    }
    false
}

/// `mod name;` declarations, each with the inline modules it is written in and whether
/// the child is test-only.
fn declared_children(
    tokens: &[Token],
    inline: &[ModulePath],
    in_test: &[bool],
) -> Vec<(ModulePath, String, bool)> {
    tokens
        .windows(3)
        .enumerate()
        .filter_map(|(i, window)| match window {
            [Token::Ident(keyword), Token::Ident(name), Token::Punct(';')] if keyword == "mod" => {
                let test_only = in_test[i] || under_cfg_test(tokens, i);
                Some((inline[i].clone(), name.clone(), test_only))
            }
            _ => None,
        })
        .collect()
}

/// Whether the tokens hold a `#[path = "..."]` attribute.
pub fn has_path_attribute(tokens: &[Token]) -> bool {
    tokens.windows(4).any(|window| {
        matches!(window, [Token::Punct('#'), Token::Punct('['), Token::Ident(name), Token::Punct('=')] if name == "path")
    })
}
