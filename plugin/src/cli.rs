//! The command line: global kubectl-style flags and one subcommand per verb.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the recipes you may install: chart, versions and the values you may set.
    #[command(after_help = "\
Examples:
  # Every recipe
  kubectl provider recipes

  # One recipe, with the values you may set and their bounds
  kubectl provider recipes podinfo

  # As YAML
  kubectl provider recipes podinfo -o yaml

  # Names only, of the recipes with a label
  kubectl provider recipes -l tier=platform -o jsonpath='{.items[*].metadata.name}'")]
    Recipes {
        /// Show this recipe only, in detail.
        name: Option<String>,
        #[command(flatten)]
        selector: SelectorFlag,
    },

    /// List the edges and whether you may install onto each (asked of the API server).
    #[command(after_help = "\
Examples:
  # Every edge, with your install permission on each
  kubectl provider edges

  # What a tenant may do, asked by a platform admin
  kubectl provider edges --as alice --as-group tenants

  # One edge, with its workspace UUID and API endpoint
  kubectl provider edges edge-1 -o wide

  # The edges of one region where you may install, as custom columns
  kubectl provider edges -l region=eu -o custom-columns=EDGE:.edge.metadata.name,INSTALL:.install.allowed")]
    Edges {
        /// Show this edge only.
        name: Option<String>,
        #[command(flatten)]
        selector: SelectorFlag,
    },

    /// Install a recipe onto an edge: create or update a Workspace (server-side apply).
    #[command(after_help = "\
Examples:
  # Install with the recipe's defaults
  kubectl provider install monitoring --recipe podinfo --edge edge-1

  # Pin a version, set values, and wait for the result
  kubectl provider install monitoring --recipe podinfo --edge edge-1 --version 6.5.0 \\
      --set replicaCount=2 --set ui.message=hello --wait --timeout 10m

  # Values from a file, then from --set (later wins)
  kubectl provider install monitoring --recipe podinfo --edge edge-1 -f values.yaml

  # See the plan the webhook would seal, without creating anything
  kubectl provider install monitoring --recipe podinfo --edge edge-1 --dry-run=server -o yaml

Running the same install again changes nothing.")]
    Install(InstallArgs),

    /// Show a Workspace: phase, attempt, job, result, conditions and what to do next.
    #[command(after_help = "\
Examples:
  # One Workspace, with what to do next
  kubectl provider status monitoring

  # Every Workspace in the namespace, or in all namespaces
  kubectl provider status
  kubectl provider status -A -o wide

  # Only some, names only, or chosen columns
  kubectl provider status -l team=observability --no-headers
  kubectl provider status -o jsonpath='{.items[*].metadata.name}'
  kubectl provider status -o custom-columns=NAME:.metadata.name,ATTEMPT:.spec.plan.attempt

  # Watch the Workspaces change, one line per change, until Ctrl-C
  kubectl provider status -w

  # Wait until the current attempt is ready or has failed
  kubectl provider status monitoring --wait --timeout 10m")]
    Status(StatusArgs),

    /// Show the sealed plan of the current attempt; --verify checks its signature.
    #[command(after_help = "\
Examples:
  # The plan the installer runs
  kubectl provider plan monitoring

  # Check its seal against the platform's published public keys
  kubectl provider plan monitoring --verify

  # The raw sealed plan
  kubectl provider plan monitoring -o json")]
    Plan(PlanArgs),

    /// Change the values (or version) of a Workspace; starts an upgrade after a success.
    #[command(after_help = "\
Examples:
  # Change one value
  kubectl provider set monitoring --set replicaCount=3

  # Force a string, remove a value, move to another version
  kubectl provider set monitoring --set-string ui.message=0123 --set ui.color=null --version 6.6.0

  # Take over values another tool manages
  kubectl provider set monitoring --set replicaCount=3 --force-conflicts

Values are pinned while an attempt runs: wait for its result first.")]
    Set(SetArgs),

    /// Retry after a failed attempt, with the original pinned plan.
    #[command(after_help = "\
Examples:
  # Run the failed attempt's plan again and wait for the result
  kubectl provider retry monitoring --wait

A retry is refused while an attempt runs and after a success.")]
    Retry(RetryArgs),

    /// Install the same plan again after its release drifted on the edge.
    #[command(after_help = "\
Examples:
  # The release was upgraded or uninstalled by hand on the edge: put the sealed plan back
  kubectl provider repair monitoring --wait

A repair is possible while the Drifted condition is True (kubectl provider status). It
raises spec.retry; the webhook seals the installed plan again, with the same checks as a
retry.")]
    Repair(RetryArgs),

    /// Seal an earlier succeeded attempt's plan again: its chart, version and values.
    #[command(after_help = "\
Examples:
  # Back to the newest succeeded attempt before the current one
  kubectl provider rollback monitoring --wait

  # Back to attempt 2 (kubectl provider history lists the ones kept)
  kubectl provider rollback monitoring --to-attempt 2

The plan runs under today's Recipe and authorization: a version the platform withdrew is
refused. spec.version and spec.values go back to what they were for that attempt. With
GitOps, revert the manifest instead.")]
    Rollback(RollbackArgs),

    /// List the attempts of a Workspace.
    #[command(after_help = "\
Examples:
  kubectl provider history monitoring
  kubectl provider history monitoring -o yaml

  # One row per attempt, chosen columns
  kubectl provider history monitoring -o custom-columns=ATTEMPT:.attempt,RESULT:.result")]
    History {
        /// The Workspace.
        name: String,
    },

    /// Show where a Workspace installs: edge, cluster, namespace and release.
    #[command(after_help = "\
Examples:
  kubectl provider target monitoring
  kubectl provider target monitoring -o wide")]
    Target {
        /// The Workspace.
        name: String,
    },

    /// Delete a Workspace; the release and its namespace stay on the edge.
    #[command(after_help = "\
Examples:
  kubectl provider delete monitoring
  kubectl provider delete monitoring --wait

  # Platform team, edge-3 decommissioned: finish without cleaning up there
  kubectl provider delete monitoring --abandon --reason \"edge-3 decommissioned, ticket 4711\"

Deleting a Workspace stops future attempts and revokes the current attempt's runner. \
It deliberately leaves the Helm release, its namespace (with PVCs) and the provider's \
hub credential on the edge: remove those with Helm on the edge if you mean to.")]
    Delete(DeleteArgs),

    /// Print the runner's log of a failed attempt (kept on the hub by the installer).
    #[command(after_help = "\
Examples:
  # The log of the last failed attempt
  kubectl provider logs monitoring

  # Of attempt 2
  kubectl provider logs monitoring --attempt 2")]
    Logs(LogsArgs),

    /// Onboard or remove an organization (for the platform team).
    #[command(
        subcommand,
        after_help = "\
Examples:
  # Onboard org-a for the members of group org-a-engineers
  kubectl provider org add org-a --group org-a-engineers

  # The same objects as YAML, for a GitOps repository
  kubectl provider org add org-a --group org-a-engineers --dry-run -o yaml

  # Remove it: the installer loses its rights there; the namespace stays
  kubectl provider org remove org-a

  # The organizations, and whether the installer serves each
  kubectl provider org list"
    )]
    Org(OrgCommand),

    /// Print a shell completion script.
    #[command(after_help = "\
Examples:
  # bash, for this shell
  source <(kubectl-provider completion bash)

  # zsh
  kubectl-provider completion zsh > \"${fpath[1]}/_kubectl-provider\"

  # fish
  kubectl-provider completion fish > ~/.config/fish/completions/kubectl-provider.fish

Through kubectl (1.26+), `kubectl provider <TAB>` completes once kubectl_complete-provider \
(shipped beside kubectl-provider) is on PATH; no script is needed.")]
    Completion {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },

    /// Print the plugin's version.
    #[command(after_help = "\
Examples:
  kubectl provider version
  kubectl provider version -o json")]
    Version,
}

/// `logs`.
#[derive(Args, Debug)]
pub struct LogsArgs {
    /// The Workspace.
    pub name: String,
    /// The attempt (default: the newest one with a log).
    #[arg(long)]
    pub attempt: Option<i64>,
}

/// `org` subcommands.
#[derive(Subcommand, Debug)]
pub enum OrgCommand {
    /// Make a namespace an organization: label it, bind its tenants, and give the installer
    /// what it needs there (minting providers' hub credentials).
    Add(OrgAddArgs),
    /// Take the tenants' and the installer's RoleBindings and the label away; the namespace
    /// and its Workspaces stay.
    Remove {
        /// The organization (its namespace).
        name: String,
        /// Say what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// The organizations, and whether the installer serves each.
    List,
}

/// `org add`.
#[derive(Args, Debug)]
pub struct OrgAddArgs {
    /// The organization: its namespace, created when missing.
    pub name: String,
    /// A group whose members are the organization's tenants (repeatable).
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
    /// A user who is one of the organization's tenants (repeatable). (`--user` chooses
    /// the kubeconfig user, as in every kubectl command.)
    #[arg(long = "tenant-user", value_name = "USER")]
    pub users: Vec<String>,
    /// The installer's namespace (where the platform was installed).
    #[arg(long, env = "PROVIDERS_NAMESPACE", default_value = "providers-system")]
    pub installer_namespace: String,
    /// The installer's ServiceAccount.
    #[arg(long, default_value = "providers-controller")]
    pub installer_service_account: String,
    /// Print the objects (use -o yaml); apply nothing.
    #[arg(long)]
    pub dry_run: bool,
}

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

#[derive(Args, Debug)]
pub struct InstallArgs {
    /// The Workspace's name.
    pub name: String,
    /// The Recipe to install.
    #[arg(long)]
    pub recipe: String,
    /// The Edge to install onto.
    #[arg(long)]
    pub edge: String,
    /// The chart version (one the recipe allows; default: the recipe's first).
    #[arg(long)]
    pub version: Option<String>,
    #[command(flatten)]
    pub values: ValueFlags,
    #[command(flatten)]
    pub wait: WaitFlags,
    /// Process the request on the server without persisting anything.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, default_value_t = DryRun::None, default_missing_value = "server")]
    pub dry_run: DryRun,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The Workspace; without it, list the Workspaces in the namespace.
    pub name: Option<String>,
    /// List the Workspaces in every namespace.
    #[arg(short = 'A', long = "all-namespaces", conflicts_with = "name")]
    pub all_namespaces: bool,
    #[command(flatten)]
    pub selector: SelectorFlag,
    /// After listing, print a line for every change until Ctrl-C (like kubectl get -w).
    #[arg(short = 'w', long, conflicts_with = "wait")]
    pub watch: bool,
    #[command(flatten)]
    pub wait: WaitFlags,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The Workspace.
    pub name: String,
    /// Check the plan's signature against the published public keys, and that it was
    /// sealed for this Workspace.
    #[arg(long)]
    pub verify: bool,
    /// The namespace of the ConfigMap holding the public sealing keys: where the platform
    /// was installed.
    #[arg(
        long,
        value_name = "NAMESPACE",
        env = "PROVIDERS_NAMESPACE",
        default_value = "providers-system"
    )]
    pub keys_namespace: String,
    /// The ConfigMap holding the public sealing keys (entries `<keyID>.pem`).
    #[arg(long, value_name = "NAME", default_value = "providers-sealing-keys")]
    pub keys_configmap: String,
}

#[derive(Args, Debug)]
pub struct SetArgs {
    /// The Workspace.
    pub name: String,
    /// Move to this chart version (one the recipe allows).
    #[arg(long)]
    pub version: Option<String>,
    #[command(flatten)]
    pub values: ValueFlags,
    /// Take ownership of fields another field manager (for example a GitOps tool) owns.
    #[arg(long)]
    pub force_conflicts: bool,
    #[command(flatten)]
    pub wait: WaitFlags,
    /// Process the request on the server without persisting anything.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, default_value_t = DryRun::None, default_missing_value = "server")]
    pub dry_run: DryRun,
}

#[derive(Args, Debug)]
pub struct RetryArgs {
    /// The Workspace.
    pub name: String,
    #[command(flatten)]
    pub wait: WaitFlags,
}

#[derive(Args, Debug)]
pub struct RollbackArgs {
    /// The Workspace.
    pub name: String,
    /// The attempt whose plan to seal again (default: the newest succeeded attempt before
    /// the current one).
    #[arg(long, value_name = "N")]
    pub to_attempt: Option<i64>,
    #[command(flatten)]
    pub wait: WaitFlags,
}

#[derive(Args, Debug)]
pub struct DeleteArgs {
    /// The Workspace.
    pub name: String,
    /// Wait until the Workspace is gone.
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// For the platform team, when the edge is gone for good: finish the deletion without
    /// cleaning up on the edge. Needs the `abandon` verb on workspaces; recorded in an Event.
    #[arg(long)]
    pub abandon: bool,
    /// Why the edge's objects are abandoned (recorded with the deletion).
    #[arg(long, requires = "abandon", value_name = "TEXT")]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_subcommand_has_examples() {
        for sub in Cli::command().get_subcommands() {
            let help = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                help.contains("Examples:") && help.contains("kubectl"),
                "{} has no examples",
                sub.get_name()
            );
        }
    }

    #[test]
    fn dry_run_alone_means_server() {
        let cli = Cli::try_parse_from([
            "kubectl-provider",
            "install",
            "w",
            "--recipe",
            "r",
            "--edge",
            "e",
            "--dry-run",
        ])
        .unwrap();
        let Command::Install(args) = cli.command else {
            panic!("install")
        };
        assert_eq!(args.dry_run, DryRun::Server);
    }

    #[test]
    fn client_dry_run_is_refused() {
        let error = Cli::try_parse_from([
            "kubectl-provider",
            "install",
            "w",
            "--recipe",
            "r",
            "--edge",
            "e",
            "--dry-run=client",
        ])
        .unwrap_err();
        assert!(error.to_string().contains("server"), "{error}");
    }

    #[test]
    fn global_flags_go_anywhere() {
        let cli = Cli::try_parse_from([
            "kubectl-provider",
            "status",
            "w",
            "-n",
            "org-a",
            "-o",
            "yaml",
            "--as",
            "alice",
            "--as-group",
            "tenants",
            "--as-group",
            "x",
        ])
        .unwrap();
        assert_eq!(cli.global.namespace.as_deref(), Some("org-a"));
        assert_eq!(cli.global.output, OutputFormat::Yaml);
        assert_eq!(cli.global.as_groups, ["tenants", "x"]);
    }
}
