//! Command-line arguments.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};
use providers_shared::installer::DEFAULT_HELM_IMAGE;

use providers_runtime::client::ClientArgs;

#[derive(Parser)]
#[command(
    version,
    about = "Sealed provider installs: admission webhook and installer controller"
)]
pub struct Cli {
    /// Log format.
    #[arg(
        long,
        value_enum,
        default_value = "text",
        global = true,
        env = "PROVIDERS_LOG_FORMAT"
    )]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve the mutating and validating admission webhooks over HTTPS.
    Serve(ServeArgs),
    /// Write a new Ed25519 sealing key (PKCS#8 PEM) and its public key (SPKI PEM).
    Keygen(KeygenArgs),
    /// Run the installer controller.
    Controller(ControllerArgs),
}

#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    /// Address to listen on (HTTPS: the admission reviews).
    #[arg(long, default_value = "0.0.0.0:8443", env = "PROVIDERS_LISTEN")]
    pub listen: SocketAddr,
    /// Address of the plain-HTTP /healthz, /readyz and /metrics endpoints.
    #[arg(long, default_value = "0.0.0.0:8080", env = "PROVIDERS_ADMIN_LISTEN")]
    pub admin_listen: SocketAddr,
    /// MiB of review bodies read and decided at once (each costs about three times its
    /// size until it is decoded); more wait with their bodies unread. At least one review of
    /// the largest size (6 MiB) always fits.
    #[arg(long, default_value_t = 8)]
    pub review_budget_mib: usize,
    /// Seconds after stored values were last marked sealed during which a plan over values
    /// this webhook checked is sealed again without a new mark (no write to the hub). It is
    /// written beside each mark, and the installer's sweep adds it to its grace; at most
    /// 3600, 0 marks on every seal.
    #[arg(long, default_value_t = providers_shared::plan_values::reseal::MARK_WINDOW.as_secs() as u64)]
    pub plan_values_mark_window: u64,
    /// Serving certificate (PEM); reloaded when the file changes.
    #[arg(long, env = "PROVIDERS_TLS_CERT")]
    pub tls_cert: PathBuf,
    /// Serving private key (PEM); reloaded when the file changes.
    #[arg(long, env = "PROVIDERS_TLS_KEY")]
    pub tls_key: PathBuf,
    /// The Ed25519 sealing key (PKCS#8 PEM), from a Secret.
    #[arg(long, env = "PROVIDERS_SEALING_KEY")]
    pub sealing_key: PathBuf,
    /// A folder of extra public keys (`*.pem`) accepted when verifying plans, for key
    /// rotation: the published keys ConfigMap, mounted.
    #[arg(long, env = "PROVIDERS_PUBLIC_KEYS_DIR")]
    pub public_keys_dir: Option<PathBuf>,
    /// Chart repository URL prefixes a Recipe may install from. Repeatable.
    #[arg(
        long = "allowed-chart-repository",
        env = "PROVIDERS_ALLOWED_CHART_REPOSITORIES",
        value_delimiter = ','
    )]
    pub allowed_chart_repositories: Vec<String>,
    #[command(flatten)]
    pub client: ClientArgs,
    /// The CA (PEM) that signs the API server's client certificate for webhooks. Callers
    /// without a certificate it signed, for one of --allowed-client, are refused during the
    /// TLS handshake. Reloaded when the file changes.
    #[arg(long, env = "PROVIDERS_CLIENT_CA")]
    pub client_ca: Option<PathBuf>,
    /// A subject common name or DNS name a caller's certificate may carry (the API server's
    /// webhook client certificate). Repeatable.
    #[arg(
        long = "allowed-client",
        env = "PROVIDERS_ALLOWED_CLIENTS",
        value_delimiter = ','
    )]
    pub allowed_clients: Vec<String>,
    /// Answer any TLS client, without a client certificate: for clusters whose API server
    /// cannot present one (most managed clusters). Then only the network keeps other
    /// callers away; see docs/security.md.
    #[arg(long, conflicts_with = "client_ca")]
    pub allow_unauthenticated_callers: bool,
    /// Seconds to go on serving after SIGTERM, with `/readyz` failing, before the port
    /// closes and in-flight requests drain: a Pod's removal from the Service's endpoints
    /// reaches the API server's webhook client a moment after the kubelet's SIGTERM, and
    /// a connection it opens to a closed port meanwhile is a refused Workspace write.
    /// At most 60: the delay and the 20 s drain must end within the Pod's termination
    /// grace period.
    #[arg(
        long,
        default_value_t = 5,
        env = "PROVIDERS_SHUTDOWN_DELAY",
        value_parser = clap::value_parser!(u64).range(0..=60)
    )]
    pub shutdown_delay: u64,
}

#[derive(Args, Clone, Debug)]
pub struct ControllerArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The controller's namespace on the hub: its Lease and the sealing keys ConfigMap.
    #[arg(long, env = "PROVIDERS_NAMESPACE", default_value = "providers-system")]
    pub namespace: String,
    /// The namespace of the edges' kubeconfig Secrets: the only one where the installer
    /// reads Secrets. An Edge whose Secret is elsewhere is not connected.
    #[arg(
        long,
        env = "PROVIDERS_EDGE_CREDENTIALS_NAMESPACE",
        default_value = "providers-edges"
    )]
    pub edge_credentials_namespace: String,
    /// The ConfigMap of published sealing public keys (entries `<keyID>.pem`).
    #[arg(long, default_value = "providers-sealing-keys")]
    pub keys_config_map: String,
    /// The base name of the installer's Leases (ADR 40): this one elects who runs the
    /// hub-wide duties; `<name>-member-<identity>` says a replica is live, and
    /// `<name>-edge-<edge>` fences the writes to one edge.
    #[arg(long, default_value = "providers-installer")]
    pub lease_name: String,
    /// How long a Lease lasts without renewal, in seconds.
    #[arg(long, default_value_t = 15)]
    pub lease_duration: u64,
    /// How long a holder keeps trying to renew a Lease before it lets go, in seconds.
    #[arg(long, default_value_t = 10)]
    pub renew_deadline: u64,
    /// How often to try to acquire or renew the Lease, in seconds.
    #[arg(long, default_value_t = 2)]
    pub retry_period: u64,
    /// This replica's name in the Lease (default: the host name and process ID).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// The runner's image; it must provide `helm`.
    #[arg(long, env = "PROVIDERS_HELM_IMAGE", default_value = DEFAULT_HELM_IMAGE)]
    pub helm_image: String,
    /// Helm's --wait strategy.
    #[arg(long, default_value = "watcher", value_parser = ["watcher", "hookOnly", "legacy"])]
    pub helm_wait: String,
    /// The runner Job's activeDeadlineSeconds.
    #[arg(long, default_value_t = 900)]
    pub job_deadline: i64,
    /// How long a preparation may stay without its Job before it is redone, in seconds.
    #[arg(long, default_value_t = 300)]
    pub preparation_ttl: i64,
    /// How many attempt records each Workspace's status keeps.
    #[arg(long, default_value_t = 20)]
    pub attempt_history: usize,
    /// Of how many succeeded attempts per Workspace the plan is kept, for
    /// `kubectl provider rollback` (fewer when they pass 128 KiB together). Helm keeps 10
    /// revisions of a release by default.
    #[arg(long, default_value_t = 10)]
    pub rollback_history: usize,
    /// How often an installed release is compared with what its attempt left on the edge,
    /// in seconds (0: never). A change of Helm's records is checked as soon as it is seen;
    /// this catches what a watch missed. Each Workspace's time is spread by up to a tenth.
    #[arg(long, default_value_t = 300)]
    pub drift_interval: u64,
    /// How often an installed release's objects are compared with its manifest by their
    /// contents, in seconds (0: never; ADR 47). Also once right after every attempt, and
    /// after a restart at a point of the interval spread by the Workspace. Checked on the
    /// drift interval's passes, so it is never more often than that.
    #[arg(long, default_value_t = 1800)]
    pub drift_content_interval: u64,
    /// Of how many failed attempts per Workspace the runner's log is kept on the hub.
    #[arg(long, default_value_t = 5)]
    pub runner_log_history: usize,
    /// Address of the plain-HTTP /metrics, /healthz and /readyz endpoints.
    #[arg(long, env = "PROVIDERS_METRICS_LISTEN", default_value = "0.0.0.0:8080")]
    pub metrics_listen: SocketAddr,
    /// Workspaces reconciled at the same time.
    #[arg(long, default_value_t = 16)]
    pub concurrency: u16,
    /// How often a Ready edge is probed, in seconds.
    #[arg(long, default_value_t = 10)]
    pub edge_probe_interval: u64,
    /// The longest wait between probes of an unreachable edge, in seconds.
    #[arg(long, default_value_t = 60)]
    pub edge_probe_max_backoff: u64,
    /// How often each Ready edge is swept for objects of Workspaces gone from the hub
    /// without their cleanup, in seconds (also once at the start of the replica's run).
    #[arg(long, default_value_t = 600)]
    pub orphan_sweep_interval: u64,
    /// How often the hub is swept for PlanValues no plan refers to any more, in seconds
    /// (also once in every leader term, when the Workspace cache is in).
    #[arg(long, default_value_t = 600)]
    pub plan_values_sweep_interval: u64,
    /// How long after a plan referring to them was last sealed PlanValues are kept whatever
    /// refers to them, in seconds: longer than the webhook's timeout and the installer's
    /// cache lag together, so that values sealed a moment ago are never swept.
    #[arg(long, default_value_t = providers_shared::plan_values::sweep::GRACE.as_secs() as u64)]
    pub plan_values_grace: u64,
    /// How often every Workspace is reconciled even without a change, in seconds.
    #[arg(long, default_value_t = 600)]
    pub resync: u64,
    /// The hub API URL written into providers' runtime credentials (default: the URL
    /// this controller uses).
    #[arg(long)]
    pub hub_server: Option<String>,
    /// The CA (PEM) of the hub API for providers' runtime credentials (default: the CA
    /// this controller trusts).
    #[arg(long)]
    pub hub_ca_file: Option<PathBuf>,
    /// Lifetime of a provider's runtime credential token, in seconds.
    #[arg(long, default_value_t = 365 * 24 * 3600)]
    pub runtime_credential_ttl: i64,
    /// Accept edge kubeconfigs whose user runs a program (`exec`) or a plugin
    /// (`auth-provider`) to get its credential. Off by default: such a kubeconfig would
    /// run that program inside the installer.
    #[arg(long)]
    pub allow_edge_kubeconfig_exec: bool,
    /// The most watches one HTTP/2 connection to an edge carries (the installer's
    /// per-namespace watches share connections). Keep it under the edge API server's
    /// `--http2-max-streams-per-connection` (100 by default): a watch past that limit would
    /// wait unseen.
    #[arg(long, default_value_t = providers_edge_watch::DEFAULT_STREAMS_PER_CONNECTION, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub edge_watch_streams_per_connection: u16,
    /// Only Workspaces matching this label selector (empty: all), to shard or canary.
    #[arg(long, default_value = "")]
    pub workspace_selector: String,
}

#[derive(Args, Clone, Debug)]
pub struct KeygenArgs {
    /// Where to write the private key (created with mode 0600; never overwritten).
    #[arg(long)]
    pub private_key: PathBuf,
    /// Where to write the public key; its file name in the keys ConfigMap is `<keyID>.pem`.
    #[arg(long)]
    pub public_key: PathBuf,
}

pub fn init_tracing(format: &LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
