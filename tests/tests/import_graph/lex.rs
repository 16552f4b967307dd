//! Rust source as the tokens the import graph needs: identifiers, `::` and punctuation.
//! Comments, character literals, lifetimes and numbers are dropped; a string literal is
//! dropped too unless it is a whole module path (`"crate::api::json_number::value"`, as
//! serde's `deserialize_with` names a function), which names a file as much as code does.

/// One token of the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Ident(String),
    /// `::`
    PathSep,
    /// Any other punctuation character (`{`, `}`, `;`, `,`, `*`, `$`, `(`, ...).
    Punct(char),
    /// A string literal whose content is a path from `crate`, `super` or `self`.
    PathString(Vec<String>),
}

pub fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i = skip_block_comment(&chars, i);
        } else if let Some((end, content)) = string_literal(&chars, i) {
            if let Some(path) = path_in_string(&content) {
                out.push(Token::PathString(path));
            }
            i = end;
        } else if c == '\'' {
            i = skip_char_or_lifetime(&chars, i);
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // A raw identifier (`r#type`) is the identifier.
            if word == "r"
                && chars.get(i) == Some(&'#')
                && chars.get(i + 1).is_some_and(|c| c.is_alphabetic())
            {
                i += 1;
                continue;
            }
            out.push(Token::Ident(word));
        } else if c == ':' && next == Some(':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

/// Block comments nest in Rust.
fn skip_block_comment(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// A string literal starting at `i` (`"..."`, `b"..."`, `c"..."`, `r#"..."#`, `br"..."`):
/// where it ends and its content, or `None` when no string starts there. A prefix letter is
/// only a prefix when it does not end a longer identifier, which the caller guarantees by
/// reading identifiers whole.
fn string_literal(chars: &[char], i: usize) -> Option<(usize, String)> {
    let mut j = i;
    if matches!(chars[j], 'b' | 'c') {
        j += 1;
    }
    let raw = chars.get(j) == Some(&'r');
    if raw {
        j += 1;
        let mut hashes = 0;
        while chars.get(j) == Some(&'#') {
            hashes += 1;
            j += 1;
        }
        if chars.get(j) != Some(&'"') {
            return None;
        }
        j += 1;
        let start = j;
        while j < chars.len() {
            if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
                let content = chars[start..j].iter().collect();
                return Some((j + 1 + hashes, content));
            }
            j += 1;
        }
        return Some((j, String::new()));
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    let start = j;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            '"' => return Some((j + 1, chars[start..j].iter().collect())),
            _ => j += 1,
        }
    }
    Some((j, String::new()))
}

/// `'a'`, `'\n'`, `'\u{1F600}'` are characters; `'a` (no closing quote) is a lifetime or a
/// label, of which only the quote is skipped (the name is read as an identifier, harmless).
fn skip_char_or_lifetime(chars: &[char], i: usize) -> usize {
    if chars.get(i + 1) == Some(&'\\') {
        let mut j = i + 3;
        while j < chars.len() && chars[j] != '\'' {
            j += 1;
        }
        return j + 1;
    }
    if chars.get(i + 2) == Some(&'\'') {
        return i + 3;
    }
    i + 1
}

fn path_in_string(content: &str) -> Option<Vec<String>> {
    let segments: Vec<&str> = content.split("::").collect();
    let is_ident = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    let anchored = matches!(segments[0], "crate" | "super" | "self");
    (anchored && segments.len() > 1 && segments.iter().all(|s| is_ident(s)))
        .then(|| segments.iter().map(|s| s.to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::{Token, tokens};

    fn idents(source: &str) -> Vec<String> {
        tokens(source)
            .into_iter()
            .filter_map(|t| match t {
                Token::Ident(word) => Some(word),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_and_strings_name_nothing() {
        let source = r####"
            // use crate::alpha;
            /* use crate::beta; /* nested */ use crate::gamma; */
            let s = "use crate::delta;";
            let r = r#"use crate::epsilon; "quoted" "#;
            let c = '"';
            fn f<'a>(x: &'a str) {}
            real
        "####;
        let words = idents(source);
        assert!(
            !words
                .iter()
                .any(|w| ["alpha", "beta", "gamma", "delta", "epsilon"].contains(&w.as_str())),
            "{words:?}"
        );
        assert!(words.contains(&"real".to_string()));
    }

    #[test]
    fn a_string_that_is_a_path_is_kept() {
        let found = tokens(r#"#[serde(deserialize_with = "crate::api::json_number::value")]"#);
        assert!(found.contains(&Token::PathString(vec![
            "crate".into(),
            "api".into(),
            "json_number".into(),
            "value".into()
        ])));
        assert!(
            !tokens(r#"let s = "crate::not a path";"#)
                .iter()
                .any(|t| matches!(t, Token::PathString(_)))
        );
    }
}
