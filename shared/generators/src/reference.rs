//! The API reference (docs/api-reference.md), rendered from the CRDs' schemas, so the
//! documentation says exactly what `kubectl explain` says.

use std::fmt::Write;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray,
};

/// Markdown for every CRD: one table of fields per kind, nested fields by their path.
pub fn markdown(crds: &[(&str, CustomResourceDefinition)]) -> String {
    let mut out = String::from(
        "# API reference: providers.platform.dev/v1alpha1\n\n\
         Generated from the Rust types by `cargo run -p providers-generators --bin crdgen`; do not edit.\n",
    );
    for (_, crd) in crds {
        let names = &crd.spec.names;
        let version = &crd.spec.versions[0];
        let _ = write!(
            out,
            "\n## {}\n\n`{}/{}`, {}, plural `{}`{}.\n\n",
            names.kind,
            crd.spec.group,
            version.name,
            crd.spec.scope.to_lowercase(),
            names.plural,
            names
                .short_names
                .as_ref()
                .filter(|s| !s.is_empty())
                .map(|s| format!(", short name `{}`", s.join("`, `")))
                .unwrap_or_default()
        );
        let Some(schema) = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
        else {
            continue;
        };
        if let Some(description) = &schema.description {
            let _ = writeln!(out, "{}\n", one_line(description));
        }
        out.push_str("| field | type | description |\n|---|---|---|\n");
        for (name, property) in schema.properties.iter().flatten() {
            if name == "spec" || name == "status" {
                fields(&mut out, name, property);
            }
        }
    }
    out
}

fn fields(out: &mut String, path: &str, schema: &JSONSchemaProps) {
    let _ = writeln!(
        out,
        "| `{path}` | {} | {} |",
        type_of(schema),
        schema
            .description
            .as_deref()
            .map(one_line)
            .unwrap_or_default()
            .replace('|', "\\|")
    );
    for (name, property) in schema.properties.iter().flatten() {
        fields(out, &format!("{path}.{name}"), property);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(items)) = &schema.items {
        for (name, property) in items.properties.iter().flatten() {
            fields(out, &format!("{path}[].{name}"), property);
        }
    }
}

fn type_of(schema: &JSONSchemaProps) -> String {
    let base = schema.type_.clone().unwrap_or_else(|| "object".to_owned());
    match (&schema.items, base.as_str()) {
        (Some(JSONSchemaPropsOrArray::Schema(items)), "array") => {
            format!(
                "[]{}",
                items.type_.clone().unwrap_or_else(|| "object".to_owned())
            )
        }
        _ => base,
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
