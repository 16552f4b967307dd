//! kubectl's JSONPath templates (`-o jsonpath=TEMPLATE`): text with `{.path}` expressions,
//! `{"quoted\n"}` literals and `{range .path}...{end}` loops, evaluated against the JSON that
//! `-o json` prints.
//!
//! kubectl's paths (`.items[*].metadata.name`, `.metadata.labels.app\.kubernetes\.io/name`,
//! `[?(@.type=="Ready")]`) are turned into RFC 9535 JSONPath, which `jsonpath-rust` evaluates:
//! each dotted name becomes a bracketed name, so names with `-`, `/` or escaped dots work.

use jsonpath_rust::{JsonPath as _, parser::parse_json_path};
use serde_json::Value;

/// The deepest `{range}` nesting a template may have (rendering recurses once per level).
const MAX_RANGE_DEPTH: usize = 16;
/// The longest template accepted: a command line, not a program.
const MAX_TEMPLATE_LEN: usize = 8192;

/// Why a template cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("the template is empty: write it like {{.metadata.name}}")]
    Empty,
    #[error("the template is longer than {MAX_TEMPLATE_LEN} characters")]
    TooLong,
    #[error("unclosed {{ at character {at}")]
    Unclosed { at: usize },
    #[error("empty expression {{}} at character {at}")]
    EmptyExpression { at: usize },
    #[error("{{end}} without a {{range}} before it")]
    EndWithoutRange,
    #[error("{{range {path}}} has no {{end}}")]
    RangeWithoutEnd { path: String },
    #[error("{{range}} nested deeper than {MAX_RANGE_DEPTH} levels")]
    TooDeep,
    #[error("bad string {literal}: write it like {{\"text\\n\"}}")]
    BadString { literal: String },
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath { path: String, reason: String },
}

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
    let mut i = 0;
    // `metadata.name` reads as `.metadata.name`.
    let mut expect_name = !chars.is_empty() && chars[0] != '.' && chars[0] != '[';
    while i < chars.len() || expect_name {
        if expect_name {
            let (name, next) = read_name(&chars, i);
            if name.is_empty() {
                return Err(format!("a name is missing at character {}", i + 1));
            }
            if name == "*" {
                query.push_str("[*]");
            } else {
                query.push_str("['");
                for c in name.chars() {
                    if c == '\'' || c == '\\' {
                        query.push('\\');
                    }
                    query.push(c);
                }
                query.push_str("']");
            }
            i = next;
            expect_name = false;
            continue;
        }
        match chars[i] {
            '.' if chars.get(i + 1) == Some(&'.') => {
                query.push_str("..");
                i += 2;
                // `..[0]` or `..name`.
                expect_name = chars.get(i) != Some(&'[');
            }
            '.' if i + 1 == chars.len() && query == "$" => i += 1, // `.` is the object itself
            '.' => {
                i += 1;
                expect_name = true;
            }
            '[' => {
                let end = closing_bracket(&chars, i)
                    .ok_or_else(|| format!("unclosed [ at character {}", i + 1))?;
                if has_oversized_number(&chars[i..=end]) {
                    return Err(format!(
                        "a number in the brackets at character {} is out of range (at most 15 digits)",
                        i + 1
                    ));
                }
                query.extend(&chars[i..=end]);
                i = end + 1;
            }
            other => {
                return Err(format!(
                    "unexpected {other:?} at character {}: a path goes on with .name or [...]",
                    i + 1
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
    for &c in bracket {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                digits = 0;
            }
            None if c.is_ascii_digit() => {
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
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '\\' if chars.get(i + 1) == Some(&'.') => {
                name.push('.');
                i += 2;
            }
            '.' | '[' => break,
            c if c.is_whitespace() => break,
            c => {
                name.push(c);
                i += 1;
            }
        }
    }
    (name, i)
}

/// The index of the `]` closing the `[` at `open`, skipping quoted strings and nested brackets.
fn closing_bracket(chars: &[char], open: usize) -> Option<usize> {
    closing(chars, open, Some('['), ']')
}

/// The index of `closer` matching the opener at `open`, skipping quoted strings (with
/// backslash escapes); with `nests`, openers in between need their own closers.
fn closing(chars: &[char], open: usize, nests: Option<char>, closer: char) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut i = open;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(q) => {
                if c == '\\' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '\'' || c == '"' => quote = Some(c),
            None if Some(c) == nests => depth += 1,
            None if c == closer => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i);
                }
            }
            None => {}
        }
        i += 1;
    }
    None
}

/// A piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    /// Printed as written.
    Text(String),
    /// The values a path selects, separated by spaces.
    Values(Path),
    /// The body once for every value the path selects, with that value as the current object.
    Range { over: Path, body: Vec<Node> },
}

/// A parsed `-o jsonpath` template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    /// As the user wrote it.
    pub written: String,
    nodes: Vec<Node>,
}

impl Template {
    /// Parses a kubectl template. Text outside braces is printed as written; `{...}` holds a
    /// path, a quoted string, `range PATH` or `end`.
    pub fn parse(written: &str) -> Result<Self, TemplateError> {
        if written.trim().is_empty() {
            return Err(TemplateError::Empty);
        }
        if written.len() > MAX_TEMPLATE_LEN {
            return Err(TemplateError::TooLong);
        }
        // The open ranges, innermost last; the template's top level at the bottom.
        let mut open: Vec<(Option<Path>, Vec<Node>)> = vec![(None, Vec::new())];
        let chars: Vec<char> = written.chars().collect();
        let mut text = String::new();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '{' {
                text.push(chars[i]);
                i += 1;
                continue;
            }
            let end = closing_brace(&chars, i).ok_or(TemplateError::Unclosed { at: i + 1 })?;
            let inner: String = chars[i + 1..end].iter().collect();
            let nodes = &mut open.last_mut().ok_or(TemplateError::EndWithoutRange)?.1;
            if !text.is_empty() {
                nodes.push(Node::Text(std::mem::take(&mut text)));
            }
            let expression = inner.trim();
            if expression.is_empty() {
                return Err(TemplateError::EmptyExpression { at: i + 1 });
            }
            if expression == "end" {
                if open.len() == 1 {
                    return Err(TemplateError::EndWithoutRange);
                }
                let (over, body) = open.pop().ok_or(TemplateError::EndWithoutRange)?;
                let over = over.ok_or(TemplateError::EndWithoutRange)?;
                open.last_mut()
                    .ok_or(TemplateError::EndWithoutRange)?
                    .1
                    .push(Node::Range { over, body });
            } else if let Some(path) = expression.strip_prefix("range ") {
                if open.len() > MAX_RANGE_DEPTH {
                    return Err(TemplateError::TooDeep);
                }
                open.push((Some(Path::parse(path)?), Vec::new()));
            } else if expression.starts_with('"') || expression.starts_with('\'') {
                nodes.push(Node::Text(unquote(expression)?));
            } else {
                nodes.push(Node::Values(Path::parse(expression)?));
            }
            i = end + 1;
        }
        if open.len() > 1 {
            let path = open
                .last()
                .and_then(|(over, _)| over.as_ref())
                .map(|p| p.written.clone())
                .unwrap_or_default();
            return Err(TemplateError::RangeWithoutEnd { path });
        }
        let (_, mut nodes) = open.pop().ok_or(TemplateError::Empty)?;
        if !text.is_empty() {
            nodes.push(Node::Text(text));
        }
        Ok(Self {
            written: written.to_owned(),
            nodes,
        })
    }

    /// The template applied to `data`. Missing fields print nothing, as kubectl's default
    /// `--allow-missing-template-keys=true` does.
    pub fn render(&self, data: &Value) -> String {
        let mut out = String::new();
        render_nodes(&self.nodes, data, data, &mut out);
        out
    }
}

fn render_nodes(nodes: &[Node], root: &Value, current: &Value, out: &mut String) {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Values(path) => {
                let shown: Vec<String> = path
                    .select(root, current)
                    .into_iter()
                    .map(value_text)
                    .collect();
                out.push_str(&shown.join(" "));
            }
            Node::Range { over, body } => {
                let selected = over.select(root, current);
                // `{range .items}` walks the array's elements, like `{range .items[*]}`.
                let each: Vec<&Value> = match selected.as_slice() {
                    [Value::Array(items)] => items.iter().collect(),
                    _ => selected,
                };
                for item in each {
                    render_nodes(body, root, item, out);
                }
            }
        }
    }
}

/// A selected value as kubectl prints it: strings bare, `null` as nothing, anything else as
/// compact JSON.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The index of the `}` closing the `{` at `open`, skipping quoted strings.
fn closing_brace(chars: &[char], open: usize) -> Option<usize> {
    closing(chars, open + 1, None, '}')
}

/// A quoted literal's text: `\n`, `\t`, `\r`, `\\` and the quote are escapes.
fn unquote(literal: &str) -> Result<String, TemplateError> {
    let unterminated = || TemplateError::BadString {
        literal: literal.to_owned(),
    };
    let mut chars = literal.chars();
    let quote = chars.next().ok_or_else(unterminated)?;
    let mut text = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next().ok_or_else(unterminated)? {
                'n' => text.push('\n'),
                't' => text.push('\t'),
                'r' => text.push('\r'),
                other => text.push(other),
            },
            c if c == quote => {
                return if chars.as_str().trim().is_empty() {
                    Ok(text)
                } else {
                    Err(unterminated())
                };
            }
            c => text.push(c),
        }
    }
    Err(unterminated())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list() -> Value {
        json!({"kind": "List", "items": [
            {"metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "web", "tier-x": "1"}},
             "status": {"phase": "Succeeded", "attempt": 2,
                        "conditions": [{"type": "Ready", "status": "True"}, {"type": "Failed", "status": "False"}]}},
            {"metadata": {"name": "b", "labels": {}}, "status": {"phase": "Failed", "attempt": 1, "conditions": []}}
        ]})
    }

    fn render(template: &str) -> String {
        Template::parse(template).unwrap().render(&list())
    }

    #[test]
    fn kubectl_paths_select_like_kubectl() {
        assert_eq!(render("{.items[*].metadata.name}"), "a b");
        assert_eq!(render("{$.items[0].status.phase}"), "Succeeded");
        assert_eq!(render("{.items[-1].metadata.name}"), "b");
        assert_eq!(render("{.items[*].status.attempt}"), "2 1");
        assert_eq!(render("{..phase}"), "Succeeded Failed");
        assert_eq!(render("{.kind}"), "List");
        assert_eq!(
            render("{.items[0].metadata.labels.app\\.kubernetes\\.io/name}"),
            "web"
        );
        assert_eq!(render("{.items[0].metadata.labels.tier-x}"), "1");
        assert_eq!(
            render("{.items[0].status.conditions[?(@.type==\"Ready\")].status}"),
            "True"
        );
        assert_eq!(render("{.items[1].metadata.labels}"), "{}");
    }

    #[test]
    fn text_literals_and_missing_fields() {
        assert_eq!(
            render("names: {.items[*].metadata.name}{\"\\n\"}"),
            "names: a b\n"
        );
        assert_eq!(render("[{.nothing.here}]"), "[]");
        assert_eq!(render("{'single'}"), "single");
    }

    #[test]
    fn range_walks_each_item() {
        assert_eq!(
            render("{range .items[*]}{.metadata.name}={.status.phase}{\"\\n\"}{end}"),
            "a=Succeeded\nb=Failed\n"
        );
        assert_eq!(
            render("{range .items}{.metadata.name}{$.kind};{end}"),
            "aList;bList;"
        );
        assert_eq!(
            render("{range .items[*]}{range .status.conditions[*]}{.type},{end}|{end}"),
            "Ready,Failed,||"
        );
    }

    #[test]
    fn bad_templates_say_what_is_wrong() {
        for (template, expected) in [
            ("", TemplateError::Empty),
            ("{.a", TemplateError::Unclosed { at: 1 }),
            ("x{}", TemplateError::EmptyExpression { at: 2 }),
            ("{end}", TemplateError::EndWithoutRange),
            (
                "{range .items[*]}{.a}",
                TemplateError::RangeWithoutEnd {
                    path: ".items[*]".into(),
                },
            ),
            ("{\"abc}", TemplateError::Unclosed { at: 1 }),
            (
                "{\"a\"b}",
                TemplateError::BadString {
                    literal: "\"a\"b".into(),
                },
            ),
        ] {
            assert_eq!(Template::parse(template), Err(expected), "{template}");
        }
        for template in [
            "{.items[}",
            "{.a..}",
            "{.a b}",
            "{.items[?(@.x==)]}",
            "{.a.}",
        ] {
            let error = Template::parse(template).unwrap_err();
            assert!(
                matches!(error, TemplateError::InvalidPath { .. }),
                "{template}: {error:?}"
            );
        }
        let deep = "{range .a}".repeat(MAX_RANGE_DEPTH + 1);
        assert_eq!(Template::parse(&deep), Err(TemplateError::TooDeep));
    }

    #[test]
    fn numbers_beyond_rfc_9535_are_refused_not_overflowed() {
        for path in [
            "{.a[-9223372036854775808]}",
            "{.a[0:1:9223372036854775807]}",
        ] {
            let error = Template::parse(path).expect_err(path).to_string();
            assert!(error.contains("out of range"), "{path}: {error}");
        }
        assert!(Template::parse("{.a['9223372036854775808']}").is_ok());
    }

    #[test]
    fn no_input_panics() {
        let odd = [
            "{",
            "}",
            "{{}}",
            "{[}",
            "{]}",
            "{.[}",
            "{..}",
            "{...}",
            "{$$}",
            "{@@}",
            "{.a[-0:0:0]}",
            "{.a[::-1]}",
            "{.a[999999999999999999999]}",
            "{.a['}",
            "{.a[\"\\\"]}",
            "{\\}",
            "{range}",
            "{range }",
            "{end }",
            "{.a\\}",
            "{.\u{1b}[31m}",
            "{\"\\",
        ];
        for template in odd {
            if let Ok(t) = Template::parse(template) {
                let _ = t.render(&list());
            }
        }
        let nested = format!("{{.a{}}}", "[?(@".repeat(500));
        assert!(Template::parse(&nested).is_err());
        assert_eq!(
            Template::parse(&"x".repeat(MAX_TEMPLATE_LEN + 1)),
            Err(TemplateError::TooLong)
        );
    }

    #[test]
    fn paths_without_a_leading_dot_read_as_if_they_had_one() {
        let path = Path::parse("metadata.name").unwrap();
        let item = &list()["items"][0];
        assert_eq!(path.select(item, item), [&json!("a")]);
        assert_eq!(Path::parse("@").unwrap().select(item, item), [item]);
        assert_eq!(Path::parse(".").unwrap().select(item, item), [item]);
    }
}
