//! `providers-webhook`: the admission webhook server and the installer controller.
#![forbid(unsafe_code)]

mod admission;
mod authz;
mod cli;
mod commands;
mod controller;
mod runtime;
mod server;

use clap::Parser;

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
