//! `providers-webhook`: the admission webhook server and the installer controller. The
//! binary only parses the command line, sets up logging and TLS, and runs the command;
//! all else is the library (`lib.rs`).
#![forbid(unsafe_code)]

use clap::Parser;
use providers_webhook::{cli, commands};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = cli::Cli::parse();
    cli::init_tracing(&cli.log_format);
    // One process-wide crypto provider for every rustls user (server and kube client).
    let _ = rustls::crypto::ring::default_provider().install_default();
    match cli.command {
        cli::Command::Serve(args) => commands::serve::run(args).await,
        cli::Command::Keygen(args) => commands::keygen::run(&args),
        cli::Command::Controller(args) => commands::controller::run(args).await,
    }
}
