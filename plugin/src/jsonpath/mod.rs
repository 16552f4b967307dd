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
#[cfg(test)]
mod tests;

pub use self::{
    path::Path,
    template::{Template, value_text},
};

/// The deepest `{range}` nesting a template may have (rendering recurses once per level).
const MAX_RANGE_DEPTH: usize = 16;
/// The longest template accepted: a command line, not a program.
const MAX_TEMPLATE_LEN: usize = 8192;

/// Why a template cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("the template is empty: write it like {{.metadata.name}}")]
    Empty,
    #[error("the template is longer than {MAX_TEMPLATE_LEN} characters")]
    TooLong,
    #[error("unclosed {{ at character {at}")]
    Unclosed { at: usize },
    #[error("empty expression {{}} at character {at}")]
    EmptyExpression { at: usize },
    #[error("{{end}} without a {{range}} before it")]
    EndWithoutRange,
    #[error("{{range {path}}} has no {{end}}")]
    RangeWithoutEnd { path: String },
    #[error("{{range}} nested deeper than {MAX_RANGE_DEPTH} levels")]
    TooDeep,
    #[error("bad string {literal}: write it like {{\"text\\n\"}}")]
    BadString { literal: String },
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath { path: String, reason: String },
}
