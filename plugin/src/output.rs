//! What a command shows, in every `-o` format, and printing it.

use std::io::Write;

use serde::Serialize;
use serde_json::{Value, json};

use crate::cli::OutputFormat;

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
pub fn print(
    format: OutputFormat,
    rendered: &Rendered,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<()> {
    match format {
        OutputFormat::Table | OutputFormat::Wide => {
            let text = if format == OutputFormat::Wide {
                &rendered.wide
            } else {
                &rendered.table
            };
            if text.is_empty() {
                if let Some(note) = &rendered.empty {
                    writeln!(err, "{note}")?;
                }
            } else {
                out.write_all(text.as_bytes())?;
            }
        }
        OutputFormat::Yaml => out.write_all(serde_yaml::to_string(&rendered.data)?.as_bytes())?,
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
        }
    }

    fn printed(format: OutputFormat, r: &Rendered) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        print(format, r, &mut out, &mut err).unwrap();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn each_format_prints_its_own_form() {
        let r = sample();
        assert_eq!(printed(OutputFormat::Table, &r).0, "T\n");
        assert_eq!(printed(OutputFormat::Wide, &r).0, "W\n");
        assert_eq!(printed(OutputFormat::Name, &r).0, "x.g/a\nx.g/b\n");
        assert_eq!(
            printed(OutputFormat::Yaml, &r).0,
            "a:\n  b:\n  - 1\n  - 2\n"
        );
        assert_eq!(
            printed(OutputFormat::Json, &r).0,
            "{\n    \"a\": {\n        \"b\": [\n            1,\n            2\n        ]\n    }\n}\n"
        );
    }

    #[test]
    fn an_empty_table_says_so_on_stderr() {
        let r = Rendered {
            empty: Some("No workspaces found in namespace org-a.".into()),
            ..Rendered::default()
        };
        assert_eq!(
            printed(OutputFormat::Table, &r),
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
