//! Templates: text, `{path}` expressions, `{"literals"}` and `{range}...{end}` loops, parsed
//! once and rendered against the JSON that `-o json` prints.

use serde_json::Value;

use super::{
    closing::closing,
    path::Path,
    template_error::{MAX_RANGE_DEPTH, MAX_TEMPLATE_LEN, TemplateError},
};

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
        let mut at = 0;
        while at < chars.len() {
            if chars[at] != '{' {
                text.push(chars[at]);
                at += 1;
                continue;
            }
            let end = closing_brace(&chars, at).ok_or(TemplateError::Unclosed { at: at + 1 })?;
            let inner: String = chars[at + 1..end].iter().collect();
            let nodes = &mut open.last_mut().ok_or(TemplateError::EndWithoutRange)?.1;
            if !text.is_empty() {
                nodes.push(Node::Text(std::mem::take(&mut text)));
            }
            let expression = inner.trim();
            if expression.is_empty() {
                return Err(TemplateError::EmptyExpression { at: at + 1 });
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
            at = end + 1;
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
        Value::String(text) => text.clone(),
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
    while let Some(character) = chars.next() {
        match character {
            '\\' => match chars.next().ok_or_else(unterminated)? {
                'n' => text.push('\n'),
                't' => text.push('\t'),
                'r' => text.push('\r'),
                other => text.push(other),
            },
            _ if character == quote => {
                return if chars.as_str().trim().is_empty() {
                    Ok(text)
                } else {
                    Err(unterminated())
                };
            }
            _ => text.push(character),
        }
    }
    Err(unterminated())
}
