//! Chart values from the command line, the way helm reads them: `-f` files, then
//! `--set path=value` (typed), then `--set-string path=value` (always strings).
//!
//! `--set` types a value as helm does: `true`/`false` are booleans, integers without a
//! leading zero are integers, `null` removes the path. Unlike helm, a decimal such as
//! `0.5` is a number too, because recipes declare `number` values and a string would be
//! refused. Anything else is a string; `--set-string` keeps even `true` or `0123` a string.
//!
//! Paths are dot-separated; `\.` is a dot inside a key, `\,` a comma inside a value.
//! Lists and indexes (`a={x,y}`, `a[0]`) are refused: recipe values are scalars at paths.

mod assign;
mod set_argument;
#[cfg(test)]
mod tests;
mod values_error;
mod values_file;

use serde_json::{Map, Value};

use self::{
    assign::{apply, merge},
    set_argument::{Typing, parse_set},
    values_file::parse_file,
};

pub use values_error::ValuesError;

/// The values the command line asks for: files in order, then every `--set`, then every
/// `--set-string`, each over `base`.
pub fn build(
    mut base: Map<String, Value>,
    files: &[(String, String)],
    set: &[String],
    set_string: &[String],
) -> Result<Map<String, Value>, ValuesError> {
    for (name, text) in files {
        merge(&mut base, parse_file(name, text)?);
    }
    for (args, typing) in [(set, Typing::Typed), (set_string, Typing::String)] {
        for arg in args {
            for assignment in parse_set(arg, typing)? {
                apply(&mut base, &assignment);
            }
        }
    }
    Ok(base)
}
