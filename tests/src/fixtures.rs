//! The catalog the integration tests write: the builders of `providers_shared::testing`, and the
//! Recipe they admit against, whose chart repository nobody serves (admission never
//! fetches a chart).
//!
//! A test changes what it asserts on with struct update syntax at its call site.

use providers_shared::api::{ChartRef, RecipeSpec};
pub use providers_shared::testing::{
    EDGE_WORKSPACE_UUID, edge, edge_spec, field, recipe, replica_count, versions, with_values,
    workspace, workspace_in, workspace_spec,
};

/// The chart repository of [`recipe_spec`]: allowed by the test webhooks, served by nobody.
pub const REPOSITORY: &str = "http://127.0.0.1:1/charts";

/// A Recipe of the chart `demo` in [`REPOSITORY`], versions 0.2.0 and 0.1.0, installed as
/// release `demo` in namespace `demo`, with `replicaCount` (1 to 5) its only value field.
pub fn recipe_spec() -> RecipeSpec {
    RecipeSpec {
        chart: ChartRef {
            repository: REPOSITORY.into(),
            name: "demo".into(),
        },
        versions: versions(&["0.2.0", "0.1.0"]),
        values_schema: vec![replica_count()],
        ..providers_shared::testing::recipe_spec()
    }
}
