//! A Helm chart repository on 127.0.0.1: the fixture charts under `tests/fixtures/charts/`,
//! packaged and indexed by the real `helm package` and `helm repo index`, served by a
//! tiny HTTP/1.1 file server (GET only, one request per connection).

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use anyhow::{Context, bail};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    task::JoinHandle,
};

use crate::binaries;

/// A served chart repository. Dropping it stops the server.
pub struct ChartRepo {
    /// The repository URL (the folder that holds index.yaml), without a trailing slash.
    pub url: String,
    dir: tempfile::TempDir,
    requests: Arc<AtomicUsize>,
    server: JoinHandle<()>,
}

impl ChartRepo {
    /// Packages each `(chart, versions)` from `tests/fixtures/charts/<chart>` at each
    /// version, indexes them, and serves them. Call it inside a Tokio runtime.
    pub async fn start(charts: &[(&str, &[&str])]) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let dir = tempfile::Builder::new()
            .prefix("providers-charts-")
            .tempdir()?;
        let helm = binaries::path("helm")?;
        let fixtures = binaries::workspace_root()?.join("tests/fixtures/charts");
        let home = dir.path().join(".helm");
        for (chart, versions) in charts {
            for version in *versions {
                helm_ok(
                    Command::new(&helm)
                        .arg("package")
                        .arg(fixtures.join(chart))
                        .args(["--version", version, "--app-version", version, "-d"])
                        .arg(dir.path()),
                    &home,
                )?;
            }
        }
        helm_ok(
            Command::new(&helm)
                .args(["repo", "index"])
                .arg(dir.path())
                .args(["--url", &url]),
            &home,
        )?;
        let requests = Arc::new(AtomicUsize::new(0));
        let root = dir.path().to_path_buf();
        let counter = requests.clone();
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(serve(stream, root.clone()));
            }
        });
        Ok(Self {
            url,
            dir,
            requests,
            server,
        })
    }

    /// The folder the charts are served from.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// How many requests the server has answered.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }
}

impl Drop for ChartRepo {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn helm_ok(command: &mut Command, home: &Path) -> anyhow::Result<()> {
    let out = command
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .context("running helm")?;
    if !out.status.success() {
        bail!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Answers one request: a file of the folder by its name, or 404.
async fn serve(mut stream: TcpStream, root: PathBuf) {
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut first = text.lines().next().unwrap_or_default().split_whitespace();
    let (method, target) = (
        first.next().unwrap_or_default(),
        first.next().unwrap_or_default(),
    );
    let name = target
        .split('?')
        .next()
        .unwrap_or_default()
        .trim_start_matches('/');
    // Only plain file names of the folder: no paths, no dot files.
    let valid = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'));
    let body = if method == "GET" && valid {
        tokio::fs::read(root.join(name)).await.ok()
    } else {
        None
    };
    let response = match body {
        Some(body) => {
            let kind = if name.ends_with(".yaml") {
                "application/x-yaml"
            } else {
                "application/gzip"
            };
            let mut out = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            out.extend(body);
            out
        }
        None => {
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
        }
    };
    let _ = stream.write_all(&response).await;
    let _ = stream.shutdown().await;
}

impl ChartRepo {
    /// Publishes `chart` (from `tests/fixtures/charts`) at `version` and re-indexes the
    /// repository, as a platform team releasing a new chart version would.
    pub fn publish(&self, chart: &str, version: &str) -> anyhow::Result<()> {
        let helm = binaries::path("helm")?;
        let home = self.dir.path().join(".helm");
        let fixtures = binaries::workspace_root()?.join("tests/fixtures/charts");
        helm_ok(
            Command::new(&helm)
                .arg("package")
                .arg(fixtures.join(chart))
                .args(["--version", version, "--app-version", version, "-d"])
                .arg(self.dir.path()),
            &home,
        )?;
        helm_ok(
            Command::new(&helm)
                .args(["repo", "index"])
                .arg(self.dir.path())
                .args(["--url", &self.url]),
            &home,
        )
    }
}
