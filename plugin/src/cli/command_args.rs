//! The arguments of the subcommands that take more than a name.

use clap::{Args, Subcommand};

use super::{DryRun, SelectorFlag, ValueFlags, WaitFlags};
use crate::{duration::parse_duration, views::keys::parse_key_id};

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
    #[command(flatten)]
    pub published: PublishedKeysArgs,
}

/// Where the platform publishes its public sealing keys (`plan --verify`, `keys`).
#[derive(Args, Debug)]
pub struct PublishedKeysArgs {
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

/// `keys`.
#[derive(Args, Debug)]
pub struct KeysArgs {
    /// List the live plans sealed with this key ID (16 hex digits); exit non-zero while
    /// there is one, so a script can gate the key's retirement on it.
    #[arg(long, value_name = "KEYID", value_parser = parse_key_id)]
    pub in_use: Option<String>,
    /// Read the Workspaces of every namespace (what retiring a key needs).
    #[arg(short = 'A', long = "all-namespaces")]
    pub all_namespaces: bool,
    #[command(flatten)]
    pub published: PublishedKeysArgs,
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
