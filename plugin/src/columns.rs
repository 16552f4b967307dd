//! `-o custom-columns=HEADER:PATH,...`: a table whose columns the user names, each cell the
//! values a kubectl JSONPath selects in one row's object (joined by commas, `<none>` when
//! there are none), as `kubectl get -o custom-columns` prints it.

use serde_json::Value;

use crate::{
    jsonpath::{Path, TemplateError, value_text},
    table::{Table, named},
};

/// Why a custom-columns spec cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ColumnsError {
    #[error("no columns: write them like NAME:.metadata.name,PHASE:.status.phase")]
    Empty,
    #[error("column {part:?} is not HEADER:PATH")]
    NotHeaderAndPath { part: String },
    #[error("column {part:?} has an empty header")]
    EmptyHeader { part: String },
    #[error("column {header}: {source}")]
    Path {
        header: String,
        source: TemplateError,
    },
}

/// One column: its header and the path of its cells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomColumn {
    pub header: String,
    pub path: Path,
}

/// The columns of `-o custom-columns`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomColumns {
    /// As the user wrote them.
    pub written: String,
    pub columns: Vec<CustomColumn>,
}

impl CustomColumns {
    /// Parses `HEADER:PATH[,HEADER:PATH...]`. A path may be wrapped in braces
    /// (`NAME:{.metadata.name}`) and may leave out its leading dot, as kubectl allows.
    pub fn parse(written: &str) -> Result<Self, ColumnsError> {
        let mut columns = Vec::new();
        for part in split_columns(written) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (header, path) =
                part.split_once(':')
                    .ok_or_else(|| ColumnsError::NotHeaderAndPath {
                        part: part.to_owned(),
                    })?;
            let header = header.trim();
            if header.is_empty() {
                return Err(ColumnsError::EmptyHeader {
                    part: part.to_owned(),
                });
            }
            let path = path.trim();
            let path = path
                .strip_prefix('{')
                .and_then(|p| p.strip_suffix('}'))
                .unwrap_or(path);
            if path.trim().is_empty() {
                return Err(ColumnsError::NotHeaderAndPath {
                    part: part.to_owned(),
                });
            }
            let path = Path::parse(path).map_err(|source| ColumnsError::Path {
                header: header.to_owned(),
                source,
            })?;
            columns.push(CustomColumn {
                header: header.to_owned(),
                path,
            });
        }
        if columns.is_empty() {
            return Err(ColumnsError::Empty);
        }
        Ok(Self {
            written: written.to_owned(),
            columns,
        })
    }

    /// The table of `rows`, one line per object; with `headers`, the header line first.
    /// Nothing for no rows (the command's "nothing found" note goes to stderr).
    pub fn render(&self, rows: &[&Value], headers: bool) -> String {
        let columns: Vec<_> = self
            .columns
            .iter()
            .map(|c| named(c.header.clone()))
            .collect();
        let mut table = Table::new(&columns);
        for row in rows {
            table.push(self.columns.iter().map(|c| cell(&c.path, row)).collect());
        }
        if headers {
            table.render(false)
        } else {
            table.render_rows(false)
        }
    }
}

fn cell(path: &Path, object: &Value) -> String {
    let values: Vec<String> = path
        .select(object, object)
        .into_iter()
        .map(value_text)
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        "<none>".to_owned()
    } else {
        values.join(",")
    }
}

/// The spec split at commas outside brackets and quotes (a filter or a union may hold
/// commas: `A:.items[?(@.a=="x,y")]`).
fn split_columns(spec: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for character in spec.chars() {
        if escaped {
            escaped = false;
            current.push(character);
            continue;
        }
        match (quote, character) {
            (Some(_), '\\') => escaped = true,
            (Some(open_quote), _) if character == open_quote => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(character),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(character);
    }
    parts.push(current);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items() -> Vec<Value> {
        vec![
            json!({"metadata": {"name": "web", "labels": {"team": "a"}},
                   "status": {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "True"}, {"type": "Failed", "status": "False"}]}}),
            json!({"metadata": {"name": "db"}, "status": {"phase": "Failed"}}),
        ]
    }

    #[test]
    fn each_object_is_a_row_and_missing_cells_say_none() {
        let columns = CustomColumns::parse(
            "NAME:.metadata.name,PHASE:{.status.phase},TEAM:metadata.labels.team,TYPES:.status.conditions[*].type",
        )
        .unwrap();
        let items = items();
        let rows: Vec<&Value> = items.iter().collect();
        assert_eq!(
            columns.render(&rows, true),
            "NAME   PHASE       TEAM     TYPES\n\
             web    Succeeded   a        Ready,Failed\n\
             db     Failed      <none>   <none>\n"
        );
        assert_eq!(
            columns.render(&rows, false),
            "web   Succeeded   a        Ready,Failed\n\
             db    Failed      <none>   <none>\n"
        );
        assert_eq!(columns.render(&[], true), "");
    }

    #[test]
    fn commas_inside_filters_do_not_split_columns() {
        let columns =
            CustomColumns::parse("READY:.status.conditions[?(@.type==\"Ready\")].status,N:.a")
                .unwrap();
        assert_eq!(columns.columns.len(), 2);
        let item = &items()[0];
        assert_eq!(columns.render(&[item], true), "READY   N\nTrue    <none>\n");
    }

    #[test]
    fn bad_specs_say_which_column() {
        assert_eq!(CustomColumns::parse(""), Err(ColumnsError::Empty));
        assert_eq!(CustomColumns::parse(" , "), Err(ColumnsError::Empty));
        assert_eq!(
            CustomColumns::parse("NAME"),
            Err(ColumnsError::NotHeaderAndPath {
                part: "NAME".into()
            })
        );
        assert_eq!(
            CustomColumns::parse(":.a"),
            Err(ColumnsError::EmptyHeader { part: ":.a".into() })
        );
        assert_eq!(
            CustomColumns::parse("A:"),
            Err(ColumnsError::NotHeaderAndPath { part: "A:".into() })
        );
        let error = CustomColumns::parse("A:.a,B:.b[").unwrap_err();
        assert!(
            matches!(&error, ColumnsError::Path { header, .. } if header == "B"),
            "{error:?}"
        );
        assert!(error.to_string().starts_with("column B: invalid path"));
    }
}
