//! kubectl paths (`.items[*].metadata.name`) and their RFC 9535 form.

use jsonpath_rust::{JsonPath as _, parser::parse_json_path};
use serde_json::Value;

use super::{closing::closing, template_error::TemplateError};

/// A path as kubectl writes it, ready to evaluate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    /// As written.
    pub written: String,
    /// The same path in RFC 9535 syntax, from `$`.
    query: String,
    /// `$...`: from the document's root even inside `{range}`; otherwise from the current
    /// object.
    from_root: bool,
}

impl Path {
    /// Parses a kubectl path: `.a.b`, `$.a`, `@`, `.items[*].metadata.name`, `..name`,
    /// `.a[?(@.x=="y")]`. A path without the leading dot (`metadata.name`) is read as if it
    /// had one, as kubectl's custom columns do.
    pub fn parse(written: &str) -> Result<Self, TemplateError> {
        let trimmed = written.trim();
        let invalid = |reason: String| TemplateError::InvalidPath {
            path: trimmed.to_owned(),
            reason,
        };
        let (from_root, rest) = match trimmed.as_bytes().first() {
            Some(b'$') => (true, &trimmed[1..]),
            Some(b'@') => (false, &trimmed[1..]),
            _ => (false, trimmed),
        };
        let query = to_rfc9535(rest).map_err(invalid)?;
        parse_json_path(&query).map_err(|e| invalid(e.to_string()))?;
        Ok(Self {
            written: trimmed.to_owned(),
            query,
            from_root,
        })
    }

    /// Every value the path selects, in document order; nothing for a missing field.
    pub fn select<'a>(&self, root: &'a Value, current: &'a Value) -> Vec<&'a Value> {
        let start = if self.from_root { root } else { current };
        start.query(&self.query).unwrap_or_default()
    }
}

/// `rest` (a kubectl path after its optional `$`/`@`) in RFC 9535 syntax.
fn to_rfc9535(rest: &str) -> Result<String, String> {
    let mut query = String::from("$");
    let chars: Vec<char> = rest.chars().collect();
    let mut at = 0;
    // `metadata.name` reads as `.metadata.name`.
    let mut expect_name = !chars.is_empty() && chars[0] != '.' && chars[0] != '[';
    while at < chars.len() || expect_name {
        if expect_name {
            let (name, next) = read_name(&chars, at);
            if name.is_empty() {
                return Err(format!("a name is missing at character {}", at + 1));
            }
            if name == "*" {
                query.push_str("[*]");
            } else {
                query.push_str("['");
                for character in name.chars() {
                    if character == '\'' || character == '\\' {
                        query.push('\\');
                    }
                    query.push(character);
                }
                query.push_str("']");
            }
            at = next;
            expect_name = false;
            continue;
        }
        match chars[at] {
            '.' if chars.get(at + 1) == Some(&'.') => {
                query.push_str("..");
                at += 2;
                // `..[0]` or `..name`.
                expect_name = chars.get(at) != Some(&'[');
            }
            '.' if at + 1 == chars.len() && query == "$" => at += 1, // `.` is the object itself
            '.' => {
                at += 1;
                expect_name = true;
            }
            '[' => {
                let end = closing_bracket(&chars, at)
                    .ok_or_else(|| format!("unclosed [ at character {}", at + 1))?;
                if has_oversized_number(&chars[at..=end]) {
                    return Err(format!(
                        "a number in the brackets at character {} is out of range (at most 15 digits)",
                        at + 1
                    ));
                }
                query.extend(&chars[at..=end]);
                at = end + 1;
            }
            other => {
                return Err(format!(
                    "unexpected {other:?} at character {}: a path goes on with .name or [...]",
                    at + 1
                ));
            }
        }
    }
    Ok(query)
}

/// Whether a bracket holds a number (outside quoted names) longer than 15 digits: RFC 9535
/// allows integers up to 2^53-1 only, and the evaluator's index arithmetic overflows on
/// ones near the limits of i64.
fn has_oversized_number(bracket: &[char]) -> bool {
    let mut quote = None;
    let mut digits = 0;
    for &character in bracket {
        match quote {
            Some(open_quote) if character == open_quote => quote = None,
            Some(_) => {}
            None if character == '\'' || character == '"' => {
                quote = Some(character);
                digits = 0;
            }
            None if character.is_ascii_digit() => {
                digits += 1;
                if digits > 15 {
                    return true;
                }
            }
            None => digits = 0,
        }
    }
    false
}

/// A dotted name from `start`: up to the next unescaped `.`, `[` or white space; `\.` is a
/// dot in it.
fn read_name(chars: &[char], start: usize) -> (String, usize) {
    let mut name = String::new();
    let mut at = start;
    while at < chars.len() {
        match chars[at] {
            '\\' if chars.get(at + 1) == Some(&'.') => {
                name.push('.');
                at += 2;
            }
            '.' | '[' => break,
            character if character.is_whitespace() => break,
            character => {
                name.push(character);
                at += 1;
            }
        }
    }
    (name, at)
}

/// The index of the `]` closing the `[` at `open`, skipping quoted strings and nested brackets.
fn closing_bracket(chars: &[char], open: usize) -> Option<usize> {
    closing(chars, open, Some('['), ']')
}
