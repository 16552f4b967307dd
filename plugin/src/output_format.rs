//! `-o/--output`: the formats kubectl users know, parsed (templates included) when the
//! command line is, so a bad template is a usage error that names the flag.

use crate::{columns::CustomColumns, jsonpath::Template};

/// What `--help` says about `-o`.
pub const OUTPUT_HELP: &str = "\
Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE or custom-columns=SPEC. \
JSONPath templates read the JSON that -o json prints, as kubectl's do: \
-o jsonpath='{.items[*].metadata.name}', -o jsonpath='{range .items[*]}{.metadata.name}{\"\\n\"}{end}'. \
Custom columns print one row per listed object: -o custom-columns=NAME:.metadata.name,PHASE:.status.phase. \
jsonpath-file, custom-columns-file and go-template are not supported";

/// How results are printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// A table for people.
    #[default]
    Table,
    /// A table with more columns.
    Wide,
    /// YAML of the objects.
    Yaml,
    /// JSON of the objects.
    Json,
    /// resource/name only.
    Name,
    /// A kubectl JSONPath template applied to the JSON of the result.
    JsonPath(Template),
    /// A table of columns the user names.
    CustomColumns(CustomColumns),
}

impl OutputFormat {
    /// Whether the result is printed as a table for people (progress lines and notes go to
    /// stdout only then).
    pub fn is_table(&self) -> bool {
        matches!(self, OutputFormat::Table | OutputFormat::Wide)
    }
}

/// Parses the value of `-o` (clap's value parser).
pub fn parse_output(text: &str) -> Result<OutputFormat, String> {
    let text = text.trim();
    match text {
        "table" => return Ok(OutputFormat::Table),
        "wide" => return Ok(OutputFormat::Wide),
        "yaml" => return Ok(OutputFormat::Yaml),
        "json" => return Ok(OutputFormat::Json),
        "name" => return Ok(OutputFormat::Name),
        "jsonpath" => {
            return Err(
                "jsonpath needs a template: -o jsonpath='{.items[*].metadata.name}'".to_owned(),
            );
        }
        "custom-columns" => {
            return Err(
                "custom-columns needs columns: -o custom-columns=NAME:.metadata.name".to_owned(),
            );
        }
        _ => {}
    }
    if let Some(template) = text.strip_prefix("jsonpath=") {
        return Template::parse(template)
            .map(OutputFormat::JsonPath)
            .map_err(|e| format!("bad jsonpath template {template:?}: {e}"));
    }
    if let Some(spec) = text.strip_prefix("custom-columns=") {
        return CustomColumns::parse(spec)
            .map(OutputFormat::CustomColumns)
            .map_err(|e| format!("bad custom-columns {spec:?}: {e}"));
    }
    Err(format!(
        "unknown output format {text:?}: use one of table, wide, yaml, json, name, \
         jsonpath=TEMPLATE, custom-columns=SPEC"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_formats_and_templates_parse() {
        assert_eq!(parse_output("yaml"), Ok(OutputFormat::Yaml));
        assert!(matches!(
            parse_output("jsonpath={.items[*].metadata.name}"),
            Ok(OutputFormat::JsonPath(_))
        ));
        assert!(matches!(
            parse_output("custom-columns=NAME:.metadata.name"),
            Ok(OutputFormat::CustomColumns(_))
        ));
        assert!(OutputFormat::Wide.is_table());
        assert!(!OutputFormat::Name.is_table());
    }

    #[test]
    fn bad_values_say_what_to_write() {
        let unknown = parse_output("xml").unwrap_err();
        assert!(
            unknown.contains("table, wide, yaml, json, name"),
            "{unknown}"
        );
        assert!(
            parse_output("jsonpath")
                .unwrap_err()
                .contains("needs a template")
        );
        assert!(parse_output("jsonpath=").unwrap_err().contains("empty"));
        assert_eq!(
            parse_output("jsonpath={.a").unwrap_err(),
            "bad jsonpath template \"{.a\": unclosed { at character 1"
        );
        assert!(
            parse_output("custom-columns=NAME")
                .unwrap_err()
                .contains("is not HEADER:PATH")
        );
    }
}
