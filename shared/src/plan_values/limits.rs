//! How large values may be: stated here, checked where they are written.
//!
//! The resolved values travel to the edge in the runner's values Secret, which the API
//! server keeps under 1 MiB, and are stored on the hub in a PlanValues object. A Recipe's
//! defaults are checked when the Recipe is written, so that no Workspace is ever sealed
//! over values that could not run.

use serde_json::Value;

/// The most a Recipe's `spec.values` may weigh, as the values text the runner reads
/// (JSON, see [`crate::text::yaml_safe`]).
pub const MAX_RECIPE_VALUES_BYTES: usize = 512 * 1024;
/// The most a plan's resolved values may weigh as canonical JSON: the Recipe's defaults,
/// the tenant's values (at most 32 KiB, [`crate::tenant_values`]) and the provider
/// credential's path, with room to spare.
pub const MAX_CANONICAL_BYTES: i64 = 640 * 1024;
/// The most a PlanValues object's `spec.data` may hold: [`MAX_CANONICAL_BYTES`] that gzip
/// could not compress at all, in base64.
pub const MAX_DATA_LENGTH: usize = 4 * (MAX_CANONICAL_BYTES as usize + 1024).div_ceil(3);

/// The length of the values text the runner reads for `values`.
pub fn values_text_len(values: &Value) -> usize {
    crate::text::yaml_safe(values.to_string()).len()
}

/// Resolved values over [`MAX_CANONICAL_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the resolved values are {size} bytes of JSON, more than the {limit} a plan may hold; ask the platform team to make the recipe's defaults smaller (at most {recipe} bytes), or set fewer values",
    recipe = MAX_RECIPE_VALUES_BYTES
)]
pub struct ValuesTooLarge {
    pub size: usize,
    pub limit: usize,
}

/// A Recipe's defaults over [`MAX_RECIPE_VALUES_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "spec.values: the defaults are {size} bytes of values text, more than the {limit} a recipe may hold (every plan carries them to the edge in one Secret, which the API server keeps under 1 MiB); move what tenants never change into the chart's own values.yaml, or split the recipe"
)]
pub struct RecipeValuesTooLarge {
    pub size: usize,
    pub limit: usize,
}

/// Rule `recipe_defaults_are_bounded`: a Recipe's defaults fit in a plan with room for the
/// tenant's values.
pub fn check_recipe_values(values: Option<&Value>) -> Result<(), RecipeValuesTooLarge> {
    let size = values.map(values_text_len).unwrap_or(0);
    if size > MAX_RECIPE_VALUES_BYTES {
        return Err(RecipeValuesTooLarge {
            size,
            limit: MAX_RECIPE_VALUES_BYTES,
        });
    }
    Ok(())
}
