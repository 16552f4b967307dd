//! kubectl's JSONPath templates (`-o jsonpath=TEMPLATE`): text with `{.path}` expressions,
//! `{"quoted\n"}` literals and `{range .path}...{end}` loops, evaluated against the JSON that
//! `-o json` prints.
//!
//! kubectl's paths (`.items[*].metadata.name`, `.metadata.labels.app\.kubernetes\.io/name`,
//! `[?(@.type=="Ready")]`) are turned into RFC 9535 JSONPath, which `jsonpath-rust` evaluates:
//! each dotted name becomes a bracketed name, so names with `-`, `/` or escaped dots work.

mod closing;
mod path;
mod template;
mod template_error;
#[cfg(test)]
mod tests;

pub use self::{
    path::Path,
    template::{Template, value_text},
    template_error::TemplateError,
};
