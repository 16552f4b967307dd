//! Starts a test control plane (etcd + kube-apiserver on 127.0.0.1) and keeps it running.
//!
//! `providers-controlplane up --dir DIR` prints the kubeconfig of each user, then runs
//! until Ctrl-C (or, with `--until-stdin-closes`, until its stdin closes) and tears down.
//! The line `ready {json}` on stdout describes the control plane for scripts.
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use providers_tests::ControlPlane;
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt},
    signal::unix::SignalKind,
};

#[derive(Parser)]
#[command(
    version,
    about = "A real kube-apiserver + etcd on 127.0.0.1 for tests and demos"
)]
struct Cli {
    #[command(subcommand)]
    command: Commands,
}

#[derive(Subcommand)]
enum Commands {
    /// Run a command and kill it when this process's standard input closes (how tests
    /// keep a server they hold in a `static` from outliving the test process).
    Supervise {
        /// The program and its arguments.
        #[arg(trailing_var_arg = true, required = true)]
        command: Vec<String>,
    },
    /// Start a control plane and keep it running.
    Up {
        /// Folder for certificates, kubeconfigs, data and logs.
        #[arg(long)]
        dir: PathBuf,
        /// A short name for the control plane (used in kubeconfig names).
        #[arg(long, default_value = "hub")]
        name: String,
        /// Also stop when standard input closes (how tests supervise it).
        #[arg(long)]
        until_stdin_closes: bool,
        /// Remove the folder on the way out.
        #[arg(long)]
        remove_dir: bool,
        /// Also write the `ready` JSON to this file.
        #[arg(long)]
        info_file: Option<PathBuf>,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let (dir, name, until_stdin_closes, remove_dir, info_file) = match Cli::parse().command {
        Commands::Supervise { command } => return supervise(&command).await,
        Commands::Up {
            dir,
            name,
            until_stdin_closes,
            remove_dir,
            info_file,
        } => (dir, name, until_stdin_closes, remove_dir, info_file),
    };
    let mut plane = match ControlPlane::launch(&dir, &name).await {
        Ok(plane) => plane,
        Err(error) => {
            if remove_dir {
                let _ = std::fs::remove_dir_all(&dir);
            }
            return Err(error);
        }
    };
    let json = serde_json::to_string(&plane.info)?;
    if let Some(path) = info_file {
        std::fs::write(path, &json)?;
    }
    eprintln!("control plane {name} is ready at {}", plane.info.server);
    for (user, path) in &plane.info.kubeconfigs {
        eprintln!("  {:<15} export KUBECONFIG={}", user.name(), path.display());
    }
    println!("ready {json}");

    let mut interrupt = tokio::signal::unix::signal(SignalKind::interrupt())?;
    let mut terminate = tokio::signal::unix::signal(SignalKind::terminate())?;
    // With --until-stdin-closes, standard input also takes commands, one per line:
    // `restart-apiserver` restarts the kube-apiserver and answers `restarted` (or
    // `restart-failed <why>`) on standard output.
    let mut commands = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        let command = async {
            if until_stdin_closes {
                commands.next_line().await.ok().flatten()
            } else {
                std::future::pending::<Option<String>>().await
            }
        };
        tokio::select! {
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
            line = command => match line.as_deref().map(str::trim) {
                None => break,
                Some("restart-apiserver") => match plane.restart_apiserver().await {
                    Ok(()) => println!("restarted"),
                    Err(error) => println!("restart-failed {error:#}"),
                },
                Some(other) => println!("unknown-command {other}"),
            },
        }
    }
    plane.shutdown().await;
    if remove_dir {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}

/// Runs `command` until it exits or standard input closes; then stops it.
async fn supervise(command: &[String]) -> anyhow::Result<()> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("no command"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut sink = Vec::new();
    let mut stdin = tokio::io::stdin();
    tokio::select! {
        status = child.wait() => {
            let status = status?;
            std::process::exit(status.code().unwrap_or(1));
        }
        _ = stdin.read_to_end(&mut sink) => {
            let _ = child.kill().await;
        }
    }
    Ok(())
}
