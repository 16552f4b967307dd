//! One module per subcommand; each reads, decides with the plain functions, and prints.

pub mod complete;
mod completion;
mod ctx;
mod delete;
mod edges;
mod history;
mod install;
mod keys;
mod logs;
mod org;
mod plan;
mod recipes;
mod retry;
mod set;
mod status;
mod status_watch;
mod target;
mod values_input;
mod version;
mod write;

use crate::{
    cli::{Cli, Command},
    connect::connect,
};

pub use ctx::Ctx;

/// Runs the command. `server` receives the API server's URL once known, for error messages.
pub async fn run(cli: Cli, server: &mut Option<String>) -> anyhow::Result<()> {
    let global = cli.global;
    // Commands that need no API server.
    match &cli.command {
        Command::Completion { shell } => return completion::run(*shell),
        Command::Version => return version::run(&global.output, global.no_headers),
        _ => {}
    }
    let conn = connect(&global).await?;
    *server = Some(conn.server.clone());
    let ctx = Ctx { conn, global };
    match cli.command {
        Command::Recipes { name, selector } => recipes::run(&ctx, name, selector).await,
        Command::Edges { name, selector } => edges::run(&ctx, name, selector).await,
        Command::Install(args) => install::run(&ctx, args).await,
        Command::Status(args) => status::run(&ctx, args).await,
        Command::Plan(args) => plan::run(&ctx, args).await,
        Command::Set(args) => set::run(&ctx, args).await,
        Command::Retry(args) => retry::run(&ctx, args).await,
        Command::Repair(args) => retry::repair(&ctx, args).await,
        Command::Rollback(args) => retry::rollback(&ctx, args).await,
        Command::History { name } => history::run(&ctx, name).await,
        Command::Target { name } => target::run(&ctx, name).await,
        Command::Delete(args) => delete::run(&ctx, args).await,
        Command::Keys(args) => keys::run(&ctx, args).await,
        Command::Org(command) => org::run(&ctx, command).await,
        Command::Logs(args) => logs::run(&ctx, args).await,
        Command::Completion { .. } | Command::Version => Ok(()),
    }
}
