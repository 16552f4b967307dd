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
mod tests;
