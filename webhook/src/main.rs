//! `providers-webhook`: the admission webhook server and the installer controller. The
//! binary only parses the command line (`cli`), sets up logging and TLS, and runs the
//! command (`commands`), which wires a process from the library crates:
//! `providers-admission` (the admission webhook and its HTTPS server),
//! `providers-installer` (the installer controller), and below both `providers-edge-watch`,
//! `providers-runtime` and the core, `providers-shared`, which decides.
#![forbid(unsafe_code)]

mod cli;
mod commands;

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
