//! What a command shows, in every `-o` format, and printing it.

use std::io::Write;

use serde::Serialize;
use serde_json::{Value, json};

use crate::{cli::OutputFormat, report::user_error};

/// A command's result, ready for each output format.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rendered {
    /// For `-o yaml` and `-o json`.
    pub data: Value,
    /// For `-o table`.
    pub table: String,
    /// For `-o wide`.
    pub wide: String,
    /// For `-o name`: `kind.group/name` per object.
    pub names: Vec<String>,
    /// Said on stderr in table formats when there is nothing to show.
    pub empty: Option<String>,
    /// Whether the first line of `table` and `wide` is column headers (`--no-headers`
    /// drops it). Detail views have none.
    pub headers: bool,
    /// The array in `data` whose elements are the rows of `-o custom-columns` (`items` of a
    /// List); `None`: `data` is the one row.
    pub rows_at: Option<&'static str>,
}

impl Rendered {
    /// A result whose table and wide forms are the same text.
    pub fn text(data: Value, text: String, names: Vec<String>) -> Self {
        Self {
            data,
            wide: text.clone(),
            table: text,
            names,
            empty: None,
            headers: false,
            rows_at: None,
        }
    }

    /// The objects `-o custom-columns` prints one row for.
    pub fn rows(&self) -> Vec<&Value> {
        match self.rows_at {
            Some(key) => self
                .data
                .get(key)
                .and_then(Value::as_array)
                .map(|items| items.iter().collect())
                .unwrap_or_default(),
            None => vec![&self.data],
        }
    }
}

/// `kind.group/name`, as `kubectl get -o name` prints it.
pub fn resource_name(kind: &str, group: &str, name: &str) -> String {
    format!("{}.{group}/{name}", kind.to_lowercase())
}

/// A `v1 List` of items, as kubectl prints several objects in YAML or JSON.
pub fn list(items: Vec<Value>) -> Value {
    json!({ "apiVersion": "v1", "items": items, "kind": "List", "metadata": { "resourceVersion": "" } })
}

/// JSON indented by four spaces, as kubectl writes it.
pub fn to_json(value: &impl Serialize) -> anyhow::Result<String> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer)?;
    out.push(b'\n');
    Ok(String::from_utf8(out)?)
}

/// Prints a result in the chosen format: the result on stdout, an "empty" note on stderr.
/// `no_headers` leaves out the header line of tables.
pub fn print(
    format: &OutputFormat,
    no_headers: bool,
    rendered: &Rendered,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<()> {
    let say_empty = |err: &mut dyn Write| -> std::io::Result<()> {
        match &rendered.empty {
            Some(note) => writeln!(err, "{note}"),
            None => Ok(()),
        }
    };
    match format {
        OutputFormat::Table | OutputFormat::Wide => {
            let text = if *format == OutputFormat::Wide {
                &rendered.wide
            } else {
                &rendered.table
            };
            if text.is_empty() {
                say_empty(err)?;
            } else if no_headers && rendered.headers {
                out.write_all(
                    text.split_once('\n')
                        .map_or("", |(_, rows)| rows)
                        .as_bytes(),
                )?;
            } else {
                out.write_all(text.as_bytes())?;
            }
        }
        OutputFormat::JsonPath(template) => {
            out.write_all(template.render(&rendered.data).as_bytes())?
        }
        OutputFormat::CustomColumns(columns) => {
            let rows = rendered.rows();
            if rows.is_empty() {
                say_empty(err)?;
            } else if rows.iter().any(|row| !row.is_object()) {
                return Err(user_error(
                    "-o custom-columns: this command's result has no objects to print as rows",
                    Some("use -o json to see it, or -o jsonpath=TEMPLATE".to_owned()),
                ));
            } else {
                out.write_all(columns.render(&rows, !no_headers).as_bytes())?;
            }
        }
        OutputFormat::Yaml => out.write_all(serde_norway::to_string(&rendered.data)?.as_bytes())?,
        OutputFormat::Json => out.write_all(to_json(&rendered.data)?.as_bytes())?,
        OutputFormat::Name => {
            for name in &rendered.names {
                writeln!(out, "{name}")?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Rendered {
        Rendered {
            data: json!({"a": {"b": [1, 2]}}),
            table: "T\n".into(),
            wide: "W\n".into(),
            names: vec!["x.g/a".into(), "x.g/b".into()],
            empty: None,
            headers: false,
            rows_at: None,
        }
    }

    fn listed() -> Rendered {
        Rendered {
            data: list(vec![
                json!({"metadata": {"name": "a"}, "status": {"phase": "Failed"}}),
                json!({"metadata": {"name": "b"}}),
            ]),
            table: "NAME   PHASE\na      Failed\nb      -\n".into(),
            wide: "NAME   PHASE   X\na      Failed  1\nb      -       2\n".into(),
            names: vec![],
            empty: Some("No things found.".into()),
            headers: true,
            rows_at: Some("items"),
        }
    }

    fn format(text: &str) -> OutputFormat {
        crate::output_format::parse_output(text).unwrap()
    }

    #[test]
    fn no_headers_drops_the_header_line_of_tables_only() {
        let rendered = listed();
        assert_eq!(
            printed_with(OutputFormat::Table, true, &rendered).0,
            "a      Failed\nb      -\n"
        );
        assert_eq!(
            printed_with(OutputFormat::Wide, true, &rendered).0,
            "a      Failed  1\nb      -       2\n"
        );
        // A detail view has no header to drop.
        assert_eq!(printed_with(OutputFormat::Table, true, &sample()).0, "T\n");
    }

    #[test]
    fn jsonpath_reads_the_json_that_json_prints() {
        let rendered = listed();
        assert_eq!(
            printed(format("jsonpath={.items[*].metadata.name}"), &rendered).0,
            "a b"
        );
        assert_eq!(printed(format("jsonpath={.kind}"), &sample()).0, "");
    }

    #[test]
    fn custom_columns_print_a_row_per_listed_object() {
        let rendered = listed();
        let columns = format("custom-columns=NAME:.metadata.name,PHASE:.status.phase");
        assert_eq!(
            printed(columns.clone(), &rendered).0,
            "NAME   PHASE\na      Failed\nb      <none>\n"
        );
        assert_eq!(
            printed_with(columns.clone(), true, &rendered).0,
            "a   Failed\nb   <none>\n"
        );
        let empty = Rendered {
            data: list(vec![]),
            ..listed()
        };
        assert_eq!(
            printed(columns, &empty),
            (String::new(), "No things found.\n".into())
        );
        // A single object is one row.
        assert_eq!(
            printed(format("custom-columns=B:.a.b"), &sample()).0,
            "B\n[1,2]\n"
        );
    }

    #[test]
    fn custom_columns_of_a_result_without_objects_is_an_error() {
        let rendered = Rendered {
            data: json!({"attempts": [1, 2]}),
            rows_at: Some("attempts"),
            ..sample()
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let error = print(
            &format("custom-columns=A:.a"),
            false,
            &rendered,
            &mut out,
            &mut err,
        )
        .unwrap_err();
        assert!(
            error.to_string().starts_with("-o custom-columns:"),
            "{error}"
        );
    }

    fn printed(format: OutputFormat, rendered: &Rendered) -> (String, String) {
        printed_with(format, false, rendered)
    }

    fn printed_with(
        format: OutputFormat,
        no_headers: bool,
        rendered: &Rendered,
    ) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        print(&format, no_headers, rendered, &mut out, &mut err).unwrap();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn each_format_prints_its_own_form() {
        let rendered = sample();
        assert_eq!(printed(OutputFormat::Table, &rendered).0, "T\n");
        assert_eq!(printed(OutputFormat::Wide, &rendered).0, "W\n");
        assert_eq!(printed(OutputFormat::Name, &rendered).0, "x.g/a\nx.g/b\n");
        assert_eq!(
            printed(OutputFormat::Yaml, &rendered).0,
            "a:\n  b:\n  - 1\n  - 2\n"
        );
        assert_eq!(
            printed(OutputFormat::Json, &rendered).0,
            "{\n    \"a\": {\n        \"b\": [\n            1,\n            2\n        ]\n    }\n}\n"
        );
    }

    #[test]
    fn an_empty_table_says_so_on_stderr() {
        let rendered = Rendered {
            empty: Some("No workspaces found in namespace org-a.".into()),
            ..Rendered::default()
        };
        assert_eq!(
            printed(OutputFormat::Table, &rendered),
            (
                String::new(),
                "No workspaces found in namespace org-a.\n".into()
            )
        );
    }

    #[test]
    fn names_are_kind_dot_group() {
        assert_eq!(
            resource_name("Workspace", "providers.platform.dev", "demo"),
            "workspace.providers.platform.dev/demo"
        );
    }
}
