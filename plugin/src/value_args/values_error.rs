//! Why a `--set` argument or a values file could not be read.

/// Why a `--set` argument or a values file could not be read. The text names the
/// argument and says how to write it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ValuesError {
    #[error("--{flag} {arg:?}: {reason}")]
    Set {
        flag: &'static str,
        arg: String,
        reason: String,
    },
    #[error("values file {file}: {reason}")]
    File { file: String, reason: String },
}
