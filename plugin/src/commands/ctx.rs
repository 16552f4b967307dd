//! What every command that talks to the API server gets, and how it prints.

use std::io::Write;

use crate::{
    cli::{GlobalFlags, OutputFormat},
    connect::Connection,
    output::{Rendered, print},
};

/// What every command that talks to the API server gets.
pub struct Ctx {
    pub conn: Connection,
    pub global: GlobalFlags,
}

impl Ctx {
    pub fn output(&self) -> &OutputFormat {
        &self.global.output
    }

    /// Prints a result in the chosen output format.
    pub fn print(&self, rendered: &Rendered) -> anyhow::Result<()> {
        print(
            &self.global.output,
            self.global.no_headers,
            rendered,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
        )
    }

    /// Prints a line for people (table formats only; scripts asking for yaml, json or
    /// names get just that on stdout).
    pub fn say(&self, line: &str) -> anyhow::Result<()> {
        if self.global.output.is_table() {
            writeln!(std::io::stdout().lock(), "{line}")?;
        }
        Ok(())
    }

    /// Prints a note on stderr (seen by people, ignored by scripts reading stdout).
    pub fn note(&self, line: &str) {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}
