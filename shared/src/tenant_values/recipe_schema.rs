//! The check of tenant values against a Recipe's values schema: only the paths it lists,
//! each with its type, bounds, pattern and allowed values.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, OnceLock},
};

use regex::Regex;
use serde_json::{Map, Value};

use crate::{
    api::{ValueField, ValueType},
    text::quoted,
};

use super::value_error::{ValueError, render_path, type_name};

/// The recipe's value paths as a tree of their segments.
pub(super) struct SchemaTree<'s> {
    pub(super) root: Node<'s>,
    /// Every settable path, for messages.
    paths: Vec<&'s str>,
}

#[derive(Default)]
pub(super) struct Node<'s> {
    /// The field when a path ends here.
    field: Option<&'s ValueField>,
    children: BTreeMap<&'s str, Node<'s>>,
}

impl<'s> SchemaTree<'s> {
    pub(super) fn new(schema: &'s [ValueField]) -> Self {
        let mut root = Node::default();
        for field in schema {
            let mut node = &mut root;
            for segment in field.path.split('.') {
                node = node.children.entry(segment).or_default();
            }
            node.field = Some(field);
        }
        Self {
            root,
            paths: schema.iter().map(|f| f.path.as_str()).collect(),
        }
    }

    /// The settable paths, as a message lists them (at most twenty).
    fn allowed(&self) -> String {
        if self.paths.is_empty() {
            return "none".to_owned();
        }
        let mut paths: Vec<&str> = self.paths.clone();
        paths.sort_unstable();
        let more = paths.len().saturating_sub(20);
        let mut text = paths.into_iter().take(20).collect::<Vec<_>>().join(", ");
        if more > 0 {
            text.push_str(&format!(" and {more} more"));
        }
        text
    }
}

pub(super) fn walk<'a>(
    recipe: &str,
    tree: &SchemaTree<'_>,
    node: &Node<'_>,
    map: &'a Map<String, Value>,
    path: &mut Vec<&'a str>,
) -> Result<(), ValueError> {
    for (key, value) in map {
        let Some(child) = node.children.get(key.as_str()) else {
            return Err(not_allowed(recipe, tree, path, key));
        };
        match (value, child.field) {
            // An empty object below a path that leads to settable values sets nothing (the
            // merge leaves what is there); where a value belongs it is checked as one.
            (Value::Object(inner), None) if inner.is_empty() => {}
            (Value::Object(inner), _) if !child.children.is_empty() && !inner.is_empty() => {
                path.push(key);
                walk(recipe, tree, child, inner, path)?;
                path.pop();
            }
            (_, Some(field)) => check_leaf(recipe, field, &render_path(path, key), value)?,
            (_, None) => return Err(not_allowed(recipe, tree, path, key)),
        }
    }
    Ok(())
}

fn not_allowed(recipe: &str, tree: &SchemaTree<'_>, path: &[&str], key: &str) -> ValueError {
    ValueError::PathNotAllowed {
        path: render_path(path, key),
        recipe: recipe.to_owned(),
        allowed: tree.allowed(),
    }
}

fn check_leaf(
    recipe: &str,
    field: &ValueField,
    path: &str,
    value: &Value,
) -> Result<(), ValueError> {
    let wrong = |expected| ValueError::WrongType {
        path: path.to_owned(),
        expected,
        found: type_name(value),
    };
    match field.type_ {
        ValueType::String => {
            let Value::String(text) = value else {
                return Err(wrong("a string"));
            };
            if let Some(max) = field.max_length {
                let length = text.chars().count();
                if i64::try_from(length).unwrap_or(i64::MAX) > max {
                    return Err(ValueError::TooLong {
                        path: path.to_owned(),
                        length,
                        max,
                    });
                }
            }
            if let Some(pattern) = &field.pattern {
                let anchored =
                    anchored_regex(pattern).map_err(|e| ValueError::BadRecipePattern {
                        recipe: recipe.to_owned(),
                        path: path.to_owned(),
                        reason: e.to_string(),
                    })?;
                if !anchored.is_match(text) {
                    return Err(ValueError::PatternMismatch {
                        path: path.to_owned(),
                        value: quoted(text),
                        pattern: pattern.clone(),
                    });
                }
            }
        }
        ValueType::Integer => {
            if !(value.is_i64() || value.is_u64()) {
                return Err(wrong("an integer"));
            }
            check_bounds(field, path, value)?;
        }
        ValueType::Number => {
            if !value.is_number() {
                return Err(wrong("a number"));
            }
            check_bounds(field, path, value)?;
        }
        ValueType::Boolean => {
            if !value.is_boolean() {
                return Err(wrong("a boolean"));
            }
        }
    }
    if let Some(allowed) = &field.enum_ {
        let text = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        if !allowed.contains(&text) {
            return Err(ValueError::NotInEnum {
                path: path.to_owned(),
                value: quoted(&text),
                allowed: allowed.clone(),
            });
        }
    }
    Ok(())
}

/// A recipe pattern compiled to match whole values. Compiling costs far more than matching
/// and recipes change rarely, so compiled patterns are kept, up to a bound. They are
/// shared behind an `Arc`: a cloned `Regex` starts with an empty pool of search caches,
/// which each match would then have to build again.
fn anchored_regex(pattern: &str) -> Result<Arc<Regex>, regex::Error> {
    const MAX_CACHED: usize = 512;
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(regex) = cache.lock().ok().and_then(|c| c.get(pattern).cloned()) {
        return Ok(regex);
    }
    let regex = Arc::new(Regex::new(&format!("^(?:{pattern})$"))?);
    if let Ok(mut cache) = cache.lock() {
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(pattern.to_owned(), Arc::clone(&regex));
    }
    Ok(regex)
}

fn check_bounds(field: &ValueField, path: &str, value: &Value) -> Result<(), ValueError> {
    let Some(number) = value.as_f64() else {
        return Ok(());
    };
    if let Some(min) = field.minimum
        && number < min
    {
        return Err(ValueError::BelowMinimum {
            path: path.to_owned(),
            value: number,
            min,
        });
    }
    if let Some(max) = field.maximum
        && number > max
    {
        return Err(ValueError::AboveMaximum {
            path: path.to_owned(),
            value: number,
            max,
        });
    }
    Ok(())
}
