//! What a revision made outside the installer installs, against the sealed plan: the
//! sentence a drift of the release carries.

use serde_json::Value;

use crate::{api::Plan, text::shown};

use super::ReleaseContent;

/// What a revision made outside the installer installs, against the sealed plan and, when
/// they were read, its values (a values difference is named only then).
pub fn describe(content: &ReleaseContent, plan: &Plan, values: Option<&Value>) -> String {
    // What the edge says is anyone's words: escaped and bounded before a tenant reads it.
    let mut parts = Vec::new();
    if content.chart != plan.chart.name || content.version != plan.version {
        parts.push(format!(
            "it installs chart {} {}, the plan pins {} {}",
            shown(&content.chart),
            shown(&content.version),
            plan.chart.name,
            plan.version
        ));
    }
    match values.and_then(|values| first_difference(&content.values, values, "")) {
        Some(path) => parts.push(format!(
            "its values differ from the plan's at {}",
            match path.trim_start_matches('.') {
                "" => "the top".to_owned(),
                path => shown(path),
            }
        )),
        None if parts.is_empty() && values.is_some() => {
            parts.push("its chart, version and values are the plan's".to_owned())
        }
        None => {}
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("; {}", parts.join("; "))
}

/// The first path at which two values differ (numbers compared by value, as Helm stores
/// every number as a float); `None` when they are equal.
pub fn first_difference(found: &Value, wanted: &Value, at: &str) -> Option<String> {
    match (found, wanted) {
        (Value::Object(found), Value::Object(wanted)) => {
            let mut keys: Vec<&String> = found.keys().chain(wanted.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|key| {
                let path = format!("{at}.{key}");
                match (found.get(key), wanted.get(key)) {
                    (Some(x), Some(y)) => first_difference(x, y, &path),
                    _ => Some(path),
                }
            })
        }
        (Value::Number(found), Value::Number(wanted)) => {
            (found.as_f64() != wanted.as_f64()).then(|| at.to_owned())
        }
        (Value::Array(found), Value::Array(wanted)) if found.len() == wanted.len() => found
            .iter()
            .zip(wanted)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, &format!("{at}[{i}]"))),
        _ => (found != wanted).then(|| at.to_owned()),
    }
}
