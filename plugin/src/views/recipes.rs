//! `kubectl provider recipes`: what may be installed.

use kube::{Resource, ResourceExt};
use providers_shared::api::{Recipe, ValueField, ValueType};

use crate::{
    access::Access,
    objects::Fetched,
    output::{Rendered, list, resource_name},
    table::{Fields, Table, col, wide},
};

fn name_of(recipe: &Recipe) -> String {
    resource_name("Recipe", &Recipe::group(&()), &recipe.name_any())
}

/// Every recipe: whether the caller may use it, chart, versions and the value paths a
/// tenant may set. YAML and JSON give the Recipe objects (the permission is the table's).
pub fn recipe_list(recipes: &[(Fetched<Recipe>, Access)]) -> Rendered {
    let mut table = Table::new(&[
        col("NAME"),
        col("USE"),
        col("CHART"),
        col("VERSIONS"),
        col("SETTABLE VALUES"),
        wide("REPOSITORY"),
        wide("NAMESPACE"),
        wide("RELEASE"),
    ]);
    for (Fetched { typed: recipe, .. }, access) in recipes {
        let paths: Vec<&str> = recipe
            .spec
            .values_schema
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        table.push(vec![
            recipe.name_any(),
            access.word().to_owned(),
            recipe.spec.chart.name.clone(),
            recipe.spec.versions.join(","),
            if paths.is_empty() {
                "<none>".to_owned()
            } else {
                paths.join(",")
            },
            recipe.spec.chart.repository.clone(),
            namespace_of(&recipe.spec),
            release_of(&recipe.spec),
        ]);
    }
    Rendered {
        data: list(recipes.iter().map(|(r, _)| r.raw.clone()).collect()),
        table: table.render(false),
        wide: table.render(true),
        names: recipes.iter().map(|(r, _)| name_of(&r.typed)).collect(),
        empty: Some("No recipes found: the platform has not published any yet.".to_owned()),
        headers: true,
        rows_at: Some("items"),
    }
}

/// The answer in words, with the rule to ask for when it is no.
fn use_text(access: &Access, recipe: &str) -> String {
    match access {
        Access::Allowed { .. } => "yes".to_owned(),
        Access::Denied { .. } => format!(
            "no: ask the platform team for the `use` verb on recipes/{recipe} (providers.platform.dev)"
        ),
        Access::Unknown { error } => format!("unknown: {error}"),
    }
}

/// The namespace template a Recipe installs into (`{org}` is your namespace).
fn namespace_of(spec: &providers_shared::api::RecipeSpec) -> String {
    spec.namespace
        .clone()
        .unwrap_or_else(|| providers_shared::plan::DEFAULT_NAMESPACE.to_owned())
}

/// The release name template of a Recipe.
fn release_of(spec: &providers_shared::api::RecipeSpec) -> String {
    spec.release
        .clone()
        .unwrap_or_else(|| providers_shared::plan::DEFAULT_RELEASE.to_owned())
}

/// One recipe in detail, with whether the caller may use it and a table of the values a
/// tenant may set and their bounds.
pub fn recipe_detail(item: &Fetched<Recipe>, access: &Access) -> Rendered {
    let recipe = &item.typed;
    let mut fields = Fields::new();
    fields
        .add("Name", recipe.name_any())
        .add("You may use it", use_text(access, &recipe.name_any()))
        .add(
            "Chart",
            format!(
                "{} from {}",
                recipe.spec.chart.name, recipe.spec.chart.repository
            ),
        )
        .add("Versions", versions(&recipe.spec.versions))
        .add(
            "Installs",
            format!(
                "release {} in namespace {} on the edge",
                release_of(&recipe.spec),
                namespace_of(&recipe.spec)
            ),
        );
    if let Some(cred) = &recipe.spec.runtime_credential {
        fields.add(
            "Hub access",
            format!(
                "role {} in your namespace (kubeconfig Secret name passed at {})",
                cred.role, cred.value_path
            ),
        );
    }
    let mut text = fields.render();
    text.push_str("Values you may set:\n");
    if recipe.spec.values_schema.is_empty() {
        text.push_str("  <none>: this recipe takes no values from you\n");
    } else {
        let mut table = Table::new(&[col("PATH"), col("TYPE"), col("ALLOWED"), col("DESCRIPTION")]);
        for field in &recipe.spec.values_schema {
            table.push(vec![
                field.path.clone(),
                type_name(field.type_).to_owned(),
                allowed(field),
                field.description.clone().unwrap_or_default(),
            ]);
        }
        text.push_str(&table.render_indented(false, "  "));
    }
    if let Some(values) = recipe.spec.values.as_ref().filter(|v| !is_empty(v)) {
        text.push_str("Default values:\n");
        let yaml = serde_norway::to_string(values).unwrap_or_default();
        for line in yaml.lines() {
            text.push_str(&format!("  {line}\n"));
        }
    }
    Rendered::text(item.raw.clone(), text, vec![name_of(recipe)])
}

fn is_empty(value: &serde_json::Value) -> bool {
    value.as_object().is_some_and(|m| m.is_empty()) || value.is_null()
}

fn versions(versions: &[String]) -> String {
    versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if i == 0 {
                format!("{v} (default)")
            } else {
                v.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn type_name(value_type: ValueType) -> &'static str {
    match value_type {
        ValueType::String => "string",
        ValueType::Integer => "integer",
        ValueType::Number => "number",
        ValueType::Boolean => "boolean",
    }
}

/// The bounds of a value, in words: `one of a|b`, `1..5`, `matches ^x$`, `at most 64 chars`.
pub fn allowed(field: &ValueField) -> String {
    let mut parts = Vec::new();
    if let Some(options) = &field.enum_ {
        parts.push(format!("one of {}", options.join("|")));
    }
    let number = |n: f64| {
        if n.fract() == 0.0 && n.abs() < 1e15 {
            format!("{}", n as i64)
        } else {
            n.to_string()
        }
    };
    match (field.minimum, field.maximum) {
        (Some(min), Some(max)) => parts.push(format!("{}..{}", number(min), number(max))),
        (Some(min), None) => parts.push(format!(">= {}", number(min))),
        (None, Some(max)) => parts.push(format!("<= {}", number(max))),
        (None, None) => {}
    }
    if let Some(pattern) = &field.pattern {
        parts.push(format!("matches {pattern}"));
    }
    if let Some(max) = field.max_length {
        parts.push(format!("at most {max} chars"));
    }
    if parts.is_empty() {
        "any".to_owned()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{objects::Fetched, testdata};

    fn recipe() -> Fetched<Recipe> {
        let raw = testdata::recipe_json();
        Fetched {
            typed: serde_json::from_value(raw.clone()).unwrap(),
            raw,
        }
    }

    #[test]
    fn the_list_shows_chart_versions_and_settable_paths() {
        let allowed = Access::Allowed {
            reason: String::new(),
        };
        let rendered = recipe_list(&[(recipe(), allowed)]);
        assert_eq!(
            rendered.table,
            "NAME      USE   CHART     VERSIONS      SETTABLE VALUES\n\
             podinfo   yes   podinfo   6.5.0,6.4.0   replicaCount,ui.color,ui.message,tier\n"
        );
        assert!(rendered.wide.contains("https://charts.example/stable"));
        assert_eq!(rendered.names, ["recipe.providers.platform.dev/podinfo"]);
        assert_eq!(rendered.data["kind"], "List");
    }

    #[test]
    fn the_detail_lists_each_value_with_its_bounds() {
        let denied = Access::Denied {
            reason: String::new(),
        };
        let rendered = recipe_detail(&recipe(), &denied);
        assert_eq!(
            rendered.table,
            "\
Name:            podinfo
You may use it:  no: ask the platform team for the `use` verb on recipes/podinfo (providers.platform.dev)
Chart:           podinfo from https://charts.example/stable
Versions:        6.5.0 (default), 6.4.0
Installs:        release podinfo in namespace podinfo on the edge
Values you may set:
  PATH           TYPE      ALLOWED                  DESCRIPTION
  replicaCount   integer   1..5                     Pods to run
  ui.color       string    matches ^#[0-9a-f]{6}$
  ui.message     string    at most 64 chars
  tier           string    one of small|large
Default values:
  replicaCount: 1
"
        );
    }
}
