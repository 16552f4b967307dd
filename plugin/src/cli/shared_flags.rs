//! Flags several subcommands share: `-l`, the helm-style values, `--wait`, `--dry-run`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::duration::parse_duration;

/// `-l/--selector` on commands that list.
#[derive(Args, Debug, Clone, Default)]
pub struct SelectorFlag {
    /// List only the objects with these labels (for example -l team=a,tier!=test).
    #[arg(
        short = 'l',
        long = "selector",
        value_name = "SELECTOR",
        conflicts_with = "name"
    )]
    pub selector: Option<String>,
}

/// The values a user passes, helm-style.
#[derive(Args, Debug, Clone, Default)]
pub struct ValueFlags {
    /// Set a value: path=value, typed (123, true, null removes); several with commas.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Set a value as a string, whatever it looks like.
    #[arg(long = "set-string", value_name = "PATH=VALUE")]
    pub set_string: Vec<String>,
    /// A YAML file of values; applied before --set and --set-string.
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// How long and whether to wait for the attempt's result.
#[derive(Args, Debug, Clone)]
pub struct WaitFlags {
    /// Wait until the attempt is Ready or has failed.
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits (for example 90s, 5m, 1h30m).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
}

/// `--dry-run`: only the server-side kind exists, because only the server runs the
/// webhook that seals the plan.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DryRun {
    /// Send the request for real.
    #[default]
    None,
    /// Have the API server (and its admission webhooks) process the request without persisting it.
    Server,
}
