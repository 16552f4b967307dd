//! The GitOps engines' own code, asked through `gitops-engines` (built by
//! `tests/peers/build.sh gitops-engines` from tests/peers/gitops-engines into
//! `target/peers/bin`): kstatus as Flux and cli-utils compute it, an Argo CD health
//! script under gopher-lua, and Flux's server-side apply engine.
//!
//! The calls are async: a test's runtime keeps driving the job runner (which plays the
//! edge's kubelet on that runtime) while an engine waits for the install to finish.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
};

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::Value;
use tokio::{io::AsyncWriteExt, process::Command};

use crate::binaries;

/// What one engine says of an object: its status word and message.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Verdict {
    pub status: String,
    pub message: String,
}

/// kstatus from both implementations.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Kstatus {
    /// `sigs.k8s.io/cli-utils`.
    pub cli_utils: Verdict,
    /// Flux's fork, `github.com/fluxcd/cli-utils`.
    pub flux: Verdict,
}

/// What Flux's apply engine did with each object, and whether its wait finished.
#[derive(Clone, Debug, Deserialize)]
pub struct Applied {
    pub changes: Vec<Change>,
    pub waited: bool,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Change {
    /// `Kind/namespace/name`.
    pub subject: String,
    /// `created`, `configured`, `unchanged`, ...
    pub action: String,
}

fn binary() -> anyhow::Result<PathBuf> {
    let path = binaries::workspace_root()?.join("target/peers/bin/gitops-engines");
    if !path.exists() {
        bail!(
            "{} is missing: run `bash tests/peers/build.sh gitops-engines` first (tests/run.sh does)",
            path.display()
        );
    }
    Ok(path)
}

async fn run(args: &[&str], stdin: Option<&Value>) -> anyhow::Result<Value> {
    let mut child = Command::new(binary()?)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting gitops-engines")?;
    {
        let mut input = child.stdin.take().context("stdin")?;
        if let Some(object) = stdin {
            input.write_all(&serde_json::to_vec(object)?).await?;
        }
    }
    let out = child.wait_with_output().await?;
    if !out.status.success() {
        bail!(
            "gitops-engines {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).context("gitops-engines printed no JSON")
}

/// kstatus of `object` (as the API server returned it).
pub async fn kstatus(object: &Value) -> anyhow::Result<Kstatus> {
    Ok(serde_json::from_value(
        run(&["kstatus"], Some(object)).await?,
    )?)
}

/// The Argo CD health script `script` run on `object`.
pub async fn argocd_health(script: &Path, object: &Value) -> anyhow::Result<Verdict> {
    let script = script.to_str().context("script path")?;
    Ok(serde_json::from_value(
        run(&["argocd-health", script], Some(object)).await?,
    )?)
}

/// Applies `manifest` with Flux's apply engine as `kubeconfig`'s user; with `wait`, waits
/// (failing fast) until every applied object is Current.
pub async fn ssa_apply(
    kubeconfig: &Path,
    manifest: &Path,
    wait: Option<std::time::Duration>,
) -> anyhow::Result<Applied> {
    let kubeconfig = kubeconfig.to_str().context("kubeconfig path")?;
    let manifest = manifest.to_str().context("manifest path")?;
    let wait = wait.map(|w| format!("{}s", w.as_secs()));
    let mut args = vec![
        "ssa-apply",
        "--kubeconfig",
        kubeconfig,
        "--manifest",
        manifest,
    ];
    if let Some(wait) = &wait {
        args.extend(["--wait", wait.as_str()]);
    }
    Ok(serde_json::from_value(run(&args, None).await?)?)
}

/// The Argo CD health script as docs/gitops.md gives it: the block under the
/// `resource.customizations.health.providers.platform.dev_Workspace: |` key, dedented.
pub fn argocd_health_script_from_docs() -> anyhow::Result<String> {
    let path = binaries::workspace_root()?.join("docs/gitops.md");
    let text = std::fs::read_to_string(&path)?;
    let key = "resource.customizations.health.providers.platform.dev_Workspace: |";
    let mut lines = text.lines().skip_while(|line| !line.contains(key));
    let header = lines
        .next()
        .with_context(|| format!("{} has no {key}", path.display()))?;
    let key_indent = header.len() - header.trim_start().len();
    let block: Vec<&str> = lines
        .take_while(|line| {
            line.trim().is_empty() || line.len() - line.trim_start().len() > key_indent
        })
        .take_while(|line| !line.trim_start().starts_with("```"))
        .collect();
    let indent = block
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .context("the health script is empty")?;
    Ok(block
        .iter()
        .map(|line| line.get(indent..).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n"))
}
