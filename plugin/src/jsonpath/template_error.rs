//! Why a template cannot be used, and the bounds a template must keep.

/// The deepest `{range}` nesting a template may have (rendering recurses once per level).
pub(super) const MAX_RANGE_DEPTH: usize = 16;
/// The longest template accepted: a command line, not a program.
pub(super) const MAX_TEMPLATE_LEN: usize = 8192;

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
