//! Chart values from the command line, the way helm reads them: `-f` files, then
//! `--set path=value` (typed), then `--set-string path=value` (always strings).
//!
//! `--set` types a value as helm does: `true`/`false` are booleans, integers without a
//! leading zero are integers, `null` removes the path. Unlike helm, a decimal such as
//! `0.5` is a number too, because recipes declare `number` values and a string would be
//! refused. Anything else is a string; `--set-string` keeps even `true` or `0123` a string.
//!
//! Paths are dot-separated; `\.` is a dot inside a key, `\,` a comma inside a value.
//! Lists and indexes (`a={x,y}`, `a[0]`) are refused: recipe values are scalars at paths.

use serde_json::{Map, Number, Value};

/// Why a `--set` argument or a values file could not be read. The text names the
/// argument and says how to write it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ValuesError {
    #[error("--{flag} {arg:?}: {reason}")]
    Set {
        flag: &'static str,
        arg: String,
        reason: String,
    },
    #[error("values file {file}: {reason}")]
    File { file: String, reason: String },
}

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
        && let Ok(n) = raw.parse::<i64>()
    {
        return Some(Value::Number(n.into()));
    }
    if is_decimal(raw)
        && let Some(n) = raw.parse::<f64>().ok().and_then(Number::from_f64)
    {
        return Some(Value::Number(n));
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
    for c in text.chars() {
        if escaped {
            current.push('\\');
            current.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
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
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == target {
            return Some(i);
        }
    }
    None
}

/// Removes one level of backslash escapes: `\,` -> `,`, `\.` -> `.`, `\\` -> `\`.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(next) => out.push(next),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Applies one assignment to a values object: sets the path (creating objects on the
/// way, replacing a scalar in the way, as helm does) or removes it and any object it
/// leaves empty.
pub fn apply(values: &mut Map<String, Value>, assignment: &Assignment) {
    let Some((last, parents)) = assignment.path.split_last() else {
        return;
    };
    match &assignment.value {
        Some(value) => {
            let mut current = values;
            for key in parents {
                let slot = current
                    .entry(key.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                current = match slot {
                    Value::Object(map) => map,
                    _ => return,
                };
            }
            current.insert(last.clone(), value.clone());
        }
        None => remove(values, parents, last),
    }
}

fn remove(values: &mut Map<String, Value>, parents: &[String], last: &str) {
    match parents.split_first() {
        None => {
            values.remove(last);
        }
        Some((first, rest)) => {
            if let Some(Value::Object(child)) = values.get_mut(first) {
                remove(child, rest, last);
                if child.is_empty() {
                    values.remove(first);
                }
            }
        }
    }
}

/// Merges `overlay` into `base`: objects merge key by key, anything else replaces.
pub fn merge(base: &mut Map<String, Value>, overlay: Map<String, Value>) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) => merge(existing, incoming),
            (_, Value::Null) => {
                base.remove(&key);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Reads a values file's text: a YAML (or JSON) mapping.
pub fn parse_file(file: &str, text: &str) -> Result<Map<String, Value>, ValuesError> {
    let error = |reason: String| ValuesError::File {
        file: file.to_owned(),
        reason,
    };
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let value: Value = serde_yaml::from_str(text).map_err(|e| error(e.to_string()))?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(error(format!(
            "must be a mapping of values, not {}",
            kind(&other)
        ))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The values the command line asks for: files in order, then every `--set`, then every
/// `--set-string`, each over `base`.
pub fn build(
    mut base: Map<String, Value>,
    files: &[(String, String)],
    set: &[String],
    set_string: &[String],
) -> Result<Map<String, Value>, ValuesError> {
    for (name, text) in files {
        merge(&mut base, parse_file(name, text)?);
    }
    for (args, typing) in [(set, Typing::Typed), (set_string, Typing::String)] {
        for arg in args {
            for assignment in parse_set(arg, typing)? {
                apply(&mut base, &assignment);
            }
        }
    }
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(args: &[&str]) -> Value {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Value::Object(build(Map::new(), &[], &args, &[]).unwrap())
    }

    #[test]
    fn set_types_values_like_helm() {
        assert_eq!(
            set(&[
                "a=1", "b=true", "c=false", "d=hello", "e=007", "f=-3", "g=0", "h=", "i=1e3",
                "j=True"
            ]),
            json!({"a": 1, "b": true, "c": false, "d": "hello", "e": "007", "f": -3, "g": 0, "h": "", "i": "1e3", "j": "True"})
        );
    }

    #[test]
    fn set_reads_decimals_as_numbers() {
        assert_eq!(
            set(&["a=0.5", "b=-1.25", "c=1.", "d=.5", "e=01.5"]),
            json!({"a": 0.5, "b": -1.25, "c": "1.", "d": ".5", "e": "01.5"})
        );
    }

    #[test]
    fn set_string_keeps_strings() {
        let out = build(
            Map::new(),
            &[],
            &[],
            &["a=true,b=0123,c=null,d=1.5".to_owned()],
        )
        .unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"a": "true", "b": "0123", "c": "null", "d": "1.5"})
        );
    }

    #[test]
    fn dotted_paths_nest_objects() {
        assert_eq!(
            set(&["ingress.host=example.org", "ingress.tls.enabled=true"]),
            json!({"ingress": {"host": "example.org", "tls": {"enabled": true}}})
        );
    }

    #[test]
    fn commas_separate_assignments_unless_escaped() {
        assert_eq!(
            set(&[r"a=1,b=x\,y", r"c\.d=2"]),
            json!({"a": 1, "b": "x,y", "c.d": 2})
        );
    }

    #[test]
    fn an_equals_sign_in_a_value_is_kept() {
        assert_eq!(set(&["args=--x=1"]), json!({"args": "--x=1"}));
    }

    #[test]
    fn later_assignments_win_and_replace_scalars_in_the_way() {
        assert_eq!(set(&["a=1", "a=2"]), json!({"a": 2}));
        assert_eq!(set(&["a=1", "a.b=2"]), json!({"a": {"b": 2}}));
    }

    #[test]
    fn null_removes_the_path_and_empty_parents() {
        let base = json!({"a": {"b": 1}, "c": 2});
        let Value::Object(base) = base else {
            unreachable!()
        };
        let out = build(base, &[], &["a.b=null".to_owned()], &[]).unwrap();
        assert_eq!(Value::Object(out), json!({"c": 2}));
    }

    #[test]
    fn removing_a_missing_path_changes_nothing() {
        assert_eq!(set(&["a=1", "x.y=null"]), json!({"a": 1}));
    }

    #[test]
    fn malformed_arguments_name_the_flag_and_say_how() {
        for (arg, needle) in [
            ("novalue", "write path=value"),
            ("a[0]=1", "list indexes"),
            ("a={x,y}", "lists are not supported"),
            ("a..b=1", "segment is empty"),
            ("=1", "segment is empty"),
        ] {
            let error = parse_set(arg, Typing::Typed).unwrap_err().to_string();
            assert!(error.starts_with("--set "), "{error}");
            assert!(error.contains(needle), "{arg}: {error}");
        }
    }

    #[test]
    fn files_come_first_then_set_then_set_string() {
        let files = vec![
            ("one.yaml".to_owned(), "a: 1\nb: {c: 2, d: 3}\n".to_owned()),
            ("two.yaml".to_owned(), "b: {c: 20}\n".to_owned()),
        ];
        let out = build(
            Map::new(),
            &files,
            &["a=10".to_owned()],
            &["a=11".to_owned()],
        )
        .unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"a": "11", "b": {"c": 20, "d": 3}})
        );
    }

    #[test]
    fn a_values_file_must_be_a_mapping() {
        let error = parse_file("v.yaml", "- a\n- b\n").unwrap_err().to_string();
        assert_eq!(
            error,
            "values file v.yaml: must be a mapping of values, not a list"
        );
        assert_eq!(parse_file("empty.yaml", "\n").unwrap(), Map::new());
        assert!(parse_file("bad.yaml", "a: [").is_err());
    }
}
