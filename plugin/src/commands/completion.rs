//! `completion bash|zsh|fish`.

use clap::CommandFactory;

use crate::cli::Cli;

pub fn run(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut command = Cli::command();
    // Completion attaches to the executable's own name; `kubectl provider` completes
    // through kubectl, which calls the plugin's executable.
    clap_complete::generate(
        shell,
        &mut command,
        "kubectl-provider",
        &mut std::io::stdout(),
    );
    Ok(())
}
