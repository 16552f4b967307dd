//! Plays the kubelet for an edge control plane: runs the installer's Jobs with the real
//! helm as their ServiceAccounts and writes their status (see `providers_tests::jobrunner`).
//!
//! `providers-jobrunner --info-file FILE` takes the JSON that
//! `providers-controlplane up --info-file FILE` writes, and runs until Ctrl-C.
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use providers_tests::{ControlPlaneInfo, jobrunner::JobRunner};

#[derive(Parser)]
#[command(about = "Run the installer's Jobs of an edge control plane with the real helm")]
struct Args {
    /// The control plane description written by `providers-controlplane up --info-file`.
    #[arg(long)]
    info_file: PathBuf,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.info_file)
        .with_context(|| format!("cannot read {}", args.info_file.display()))?;
    let info: ControlPlaneInfo = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a control plane description",
            args.info_file.display()
        )
    })?;
    let _runner = JobRunner::start(&info).await?;
    eprintln!(
        "running the installer's Jobs of {} ({}); Ctrl-C stops",
        info.name, info.server
    );
    tokio::signal::ctrl_c().await?;
    Ok(())
}
