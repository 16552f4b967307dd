//! Tenant values: checked against the platform's bounds and a Recipe's values schema, then
//! merged over the Recipe's defaults.

pub mod limits;
mod merge;
mod recipe_schema;
mod value_error;

use serde_json::Value;

use crate::api::ValueField;

pub use limits::within_limits;
pub use merge::{merge, set_path};

use recipe_schema::{SchemaTree, walk};
pub use value_error::ValueError;
use value_error::type_name;

/// Checks the tenant's values: first against the [`limits`], in one walk that stops at the
/// first excess; then against the recipe's schema, walking the schema's tree and stopping
/// at the first key it does not hold. The cost is linear in the values; no path string is
/// built unless a value is refused.
pub fn check(
    recipe: &str,
    schema: &[ValueField],
    values: Option<&Value>,
) -> Result<(), ValueError> {
    let Some(values) = values else { return Ok(()) };
    let Value::Object(map) = values else {
        return Err(ValueError::NotAnObject {
            found: type_name(values),
        });
    };
    within_limits(map)?;
    let tree = SchemaTree::new(schema);
    let mut path = Vec::new();
    walk(recipe, &tree, &tree.root, map, &mut path)
}

#[cfg(test)]
use crate::api::ValueType;
#[cfg(test)]
use serde_json::Map;

#[cfg(test)]
mod tests;
