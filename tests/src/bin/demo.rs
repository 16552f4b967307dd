//! The demo: a hub and an edge control plane with the webhook, the installer, a real helm
//! and a chart repository; a scripted tenant session with `kubectl provider`; then the
//! system stays up for you to explore until Ctrl-C.
use std::path::PathBuf;

use clap::Parser;
use providers_tests::demo::{self, System};

#[derive(Parser)]
#[command(about = "Run the sealed provider installs demo on local control planes")]
struct Args {
    /// Where the control planes keep their files (removed on the way out).
    #[arg(long, default_value = ".demo")]
    dir: PathBuf,
    /// Skip the scripted session: start everything and wait.
    #[arg(long)]
    no_session: bool,
    /// Stop after the scripted session instead of waiting (for CI).
    #[arg(long)]
    exit_after_session: bool,
    /// Write `KUBECONFIG_<USER>=path` lines (and EDGE_KUBECONFIG, WEBHOOK_METRICS and
    /// INSTALLER_METRICS, the `/metrics` URLs) here once the system is up.
    #[arg(long)]
    env_file: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _ = std::fs::remove_dir_all(&args.dir);
    let system = System::start(&args.dir).await?;
    let mut env = String::new();
    println!("\nThe system is up. Kubeconfigs (hub):");
    for (user, path) in &system.hub.kubeconfigs {
        println!("  {:<15} export KUBECONFIG={}", user.name(), path.display());
        env.push_str(&format!(
            "KUBECONFIG_{}={}\n",
            user.name().replace('-', "_").to_uppercase(),
            path.display()
        ));
    }
    let edge = system.edge.kubeconfig(providers_tests::User::PlatformAdmin);
    println!("  edge-1 (platform) export KUBECONFIG={}", edge.display());
    env.push_str(&format!("EDGE_KUBECONFIG={}\n", edge.display()));
    println!(
        "Metrics (OpenMetrics over plain HTTP, for a Prometheus scrape; docs/operations.md, \"Monitoring\"):"
    );
    println!("  webhook         {}", system.webhook_metrics);
    println!("  installer       {}", system.installer_metrics);
    env.push_str(&format!("WEBHOOK_METRICS={}\n", system.webhook_metrics));
    env.push_str(&format!("INSTALLER_METRICS={}\n", system.installer_metrics));
    if let Some(path) = &args.env_file {
        std::fs::write(path, &env)?;
    }

    let outcome = if args.no_session {
        Ok(())
    } else {
        demo::session::run(&system).await
    };
    match &outcome {
        Ok(()) if !args.no_session => println!("\nThe scripted session finished."),
        Ok(()) => {}
        Err(error) => eprintln!("\nThe demo failed: {error:#}"),
    }
    if outcome.is_ok() && !args.exit_after_session {
        println!(
            "Explore with the kubeconfigs above (kubectl provider is in target/debug). Ctrl-C stops everything."
        );
        let mut sigterm =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = sigterm.recv() => {}
        }
    }
    system.stop().await;
    if outcome.is_ok() {
        let _ = std::fs::remove_dir_all(&args.dir);
    } else {
        // What the processes logged is what tells why the demo failed.
        eprintln!("The logs are kept in {}", args.dir.display());
    }
    outcome
}
