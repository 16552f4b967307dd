//! `version`.

use serde_json::json;

use crate::{
    cli::OutputFormat,
    output::{Rendered, print},
};

pub fn run(format: &OutputFormat, no_headers: bool) -> anyhow::Result<()> {
    let version = env!("CARGO_PKG_VERSION");
    let api = format!(
        "{}/{}",
        providers_shared::api::GROUP,
        providers_shared::api::VERSION
    );
    let text = format!("kubectl-provider v{version} (API {api})\n");
    let rendered = Rendered::text(
        json!({ "clientVersion": { "version": format!("v{version}"), "api": api } }),
        text,
        vec![format!("kubectl-provider/v{version}")],
    );
    print(
        format,
        no_headers,
        &rendered,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )
}
