//! Each subcommand of `kubectl provider`, with its help and examples.

use clap::Subcommand;

use super::{
    DeleteArgs, InstallArgs, KeysArgs, LogsArgs, OrgCommand, PlanArgs, RetryArgs, RollbackArgs,
    SelectorFlag, SetArgs, StatusArgs,
};

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

    /// List the sealing keys live plans use, and whether each is published (for the platform team).
    #[command(after_help = "\
Examples:
  # Every key that seals a current or kept plan, or is published
  kubectl provider keys -A

  # Before retiring a key: the plans still sealed with it (exits 1 while there is one)
  kubectl provider keys -A --in-use 0123456789abcdef

  # The same as a gate in a script
  kubectl provider keys -A --in-use \"$(cat key-id)\" >/dev/null && echo retire it

A plan is live while a Workspace holds it: its current plan (running, or failed and \
retryable) and the plans kept for rollback. Each is verified again with the published \
keys before it runs or is sealed anew, so a key may leave the ConfigMap only when no live \
plan uses it.")]
    Keys(KeysArgs),

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
