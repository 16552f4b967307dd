//! Command-line arguments.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    Controller(crate::controller::ControllerArgs),
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
    /// Path of a kubeconfig; in a cluster, the Pod's service account is used.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
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
