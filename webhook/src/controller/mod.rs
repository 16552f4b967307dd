//! The installer controller.

use clap::Args;

#[derive(Args, Clone, Debug)]
pub struct ControllerArgs {}

pub async fn run(_args: ControllerArgs) -> anyhow::Result<()> {
    anyhow::bail!("the installer controller is not built yet")
}
