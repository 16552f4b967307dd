//! One `--set` or `--set-string` argument: its `path=value` assignments, typed as helm
//! types them, with `\.` and `\,` escapes.

use serde_json::{Number, Value};

use super::values_error::ValuesError;

/// How `--set` and `--set-string` type what follows `=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Typing {
    /// `--set`: booleans, numbers and null are recognised.
    Typed,
    /// `--set-string`: always a string.
    String,
}

impl Typing {
    fn flag(self) -> &'static str {
        match self {
            Typing::Typed => "set",
            Typing::String => "set-string",
        }
    }
}

/// One `path=value` assignment.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    pub path: Vec<String>,
    /// `None` removes the path (`--set path=null`).
    pub value: Option<Value>,
}

/// Parses one `--set` argument, which may hold several comma-separated assignments.
pub fn parse_set(arg: &str, typing: Typing) -> Result<Vec<Assignment>, ValuesError> {
    let error = |reason: &str| ValuesError::Set {
        flag: typing.flag(),
        arg: arg.to_owned(),
        reason: reason.to_owned(),
    };
    // A helm list (`a={x,y}`) holds commas, so it is recognised before splitting.
    if typing == Typing::Typed
        && let Some(eq) = find_unescaped(arg, '=')
        && arg[eq + 1..].starts_with('{')
    {
        return Err(error(
            "lists are not supported: recipe values are scalars; to set a value with braces use --set-string",
        ));
    }
    let mut assignments = Vec::new();
    for part in split_unescaped(arg, ',') {
        let Some(eq) = find_unescaped(&part, '=') else {
            return Err(error(
                "no value: write path=value, for example replicaCount=2",
            ));
        };
        let (key, raw) = (&part[..eq], &part[eq + 1..]);
        if key.contains('[') {
            return Err(error(
                "list indexes are not supported: recipe values are scalars at dot-separated paths",
            ));
        }
        let path: Vec<String> = split_unescaped(key, '.')
            .into_iter()
            .map(|segment| unescape(&segment))
            .collect();
        if path.iter().any(String::is_empty) {
            return Err(error(
                "a path segment is empty: write segments separated by single dots, like ingress.host",
            ));
        }
        let raw = unescape(raw);
        let value = match typing {
            Typing::String => Some(Value::String(raw)),
            Typing::Typed => typed(&raw),
        };
        assignments.push(Assignment { path, value });
    }
    Ok(assignments)
}

/// The typed value of `--set` text; `None` for `null`.
fn typed(raw: &str) -> Option<Value> {
    match raw {
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        "null" => return None,
        _ => {}
    }
    if is_integer(raw)
        && let Ok(integer) = raw.parse::<i64>()
    {
        return Some(Value::Number(integer.into()));
    }
    if is_decimal(raw)
        && let Some(decimal) = raw.parse::<f64>().ok().and_then(Number::from_f64)
    {
        return Some(Value::Number(decimal));
    }
    Some(Value::String(raw.to_owned()))
}

/// `0`, `-12`, `42`; not `007` (helm keeps leading zeros as strings: zip codes, octal modes).
fn is_integer(raw: &str) -> bool {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
}

/// `0.5`, `-1.25`, `10.0`; not `1.`, `.5`, `1e3` or `01.5`.
fn is_decimal(raw: &str) -> bool {
    let Some((whole, fraction)) = raw.split_once('.') else {
        return false;
    };
    is_integer(whole) && !fraction.is_empty() && fraction.bytes().all(|b| b.is_ascii_digit())
}

/// Splits at `sep` when it is not escaped with a backslash; keeps escapes for `unescape`.
fn split_unescaped(text: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for character in text.chars() {
        if escaped {
            current.push('\\');
            current.push(character);
            escaped = false;
        } else if character == '\\' {
            escaped = true;
        } else if character == sep {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(character);
        }
    }
    if escaped {
        current.push('\\');
    }
    parts.push(current);
    parts
}

fn find_unescaped(text: &str, target: char) -> Option<usize> {
    let mut escaped = false;
    for (at, character) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if character == '\\' {
            escaped = true;
        } else if character == target {
            return Some(at);
        }
    }
    None
}

/// Removes one level of backslash escapes: `\,` -> `,`, `\.` -> `.`, `\\` -> `\`.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(character) = chars.next() {
        if character == '\\' {
            match chars.next() {
                Some(next) => out.push(next),
                None => out.push('\\'),
            }
        } else {
            out.push(character);
        }
    }
    out
}
