//! The command line: global kubectl-style flags and one subcommand per verb.

mod command;
mod command_args;
mod shared_flags;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use clap::{Args, Parser};

pub use self::{
    command::Command,
    command_args::{
        DeleteArgs, InstallArgs, KeysArgs, LogsArgs, OrgAddArgs, OrgCommand, PlanArgs, RetryArgs,
        RollbackArgs, SetArgs, StatusArgs,
    },
    shared_flags::{DryRun, SelectorFlag, ValueFlags, WaitFlags},
};
pub use crate::output_format::OutputFormat;
use crate::{
    duration::parse_duration,
    output_format::{OUTPUT_HELP, parse_output},
};

const ABOUT: &str =
    "Install platform providers onto edge clusters as sealed, durable Helm releases";

const LONG_ABOUT: &str = "\
Install platform providers onto edge clusters as sealed, durable Helm releases.

A Workspace names a Recipe (what the platform lets you install) and an Edge (where). \
When an install attempt starts, the admission webhook seals its plan: the chart, \
version, values and target are fixed until the attempt has a result.";

const EXAMPLES: &str = "\
Examples:
  # What may I install, and where?
  kubectl provider recipes
  kubectl provider edges

  # Install a provider and wait until it is ready
  kubectl provider install monitoring --recipe podinfo --edge edge-1 --set replicaCount=2 --wait

  # Follow it, look at the sealed plan, retry after a failure
  kubectl provider status monitoring
  kubectl provider plan monitoring --verify
  kubectl provider retry monitoring --wait";

/// `kubectl provider`
#[derive(Parser, Debug)]
#[command(
    name = "kubectl-provider",
    bin_name = "kubectl provider",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = EXAMPLES,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalFlags,
    #[command(subcommand)]
    pub command: Command,
}

/// The flags every kubectl command understands.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Global options")]
pub struct GlobalFlags {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// The kubeconfig cluster to use (instead of the context's).
    #[arg(long, global = true, value_name = "NAME")]
    pub cluster: Option<String>,
    /// The kubeconfig user to use (instead of the context's).
    #[arg(long, global = true, value_name = "NAME")]
    pub user: Option<String>,
    /// The namespace (organization) of the Workspace (default: the context's namespace).
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Act as this user (impersonation).
    #[arg(long = "as", global = true, value_name = "USER")]
    pub as_user: Option<String>,
    /// Act as this group (impersonation; repeat for several groups; needs --as).
    #[arg(long = "as-group", global = true, value_name = "GROUP")]
    pub as_groups: Vec<String>,
    #[arg(
        short = 'o',
        long = "output",
        global = true,
        value_name = "FORMAT",
        value_parser = parse_output,
        default_value = "table",
        help = "Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE, custom-columns=SPEC",
        long_help = OUTPUT_HELP
    )]
    pub output: OutputFormat,
    /// Print tables (and custom columns) without their header line.
    #[arg(long, global = true)]
    pub no_headers: bool,
    /// How long to wait for the API server: connecting and each answer (0 = no limit;
    /// for example 30s, 1m).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub request_timeout: Option<std::time::Duration>,
}
