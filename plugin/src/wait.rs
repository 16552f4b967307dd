//! `--wait`: follow a Workspace until its attempt is Ready or has failed, showing progress
//! on stderr (a spinner on a terminal, one plain line per change when piped).

use std::{
    io::{IsTerminal, Write},
    time::Duration,
};

use indicatif::{ProgressBar, ProgressStyle};
use kube::Client;
use providers::api::Workspace;
use tokio::time::{Instant, sleep};

use crate::{
    duration::timeout_text,
    objects::{self, Fetched},
    report::user_error,
    state::{Wait, wait_outcome},
};

const POLL: Duration = Duration::from_millis(500);

/// Progress on stderr.
pub enum Progress {
    Spinner(ProgressBar),
    Lines { last: String },
}

impl Progress {
    /// A spinner when stderr is a terminal, plain lines otherwise.
    pub fn for_stderr() -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            Progress::Spinner(bar)
        } else {
            Progress::Lines {
                last: String::new(),
            }
        }
    }

    /// Shows where things stand; a line is printed only when it changed.
    pub fn update(&mut self, message: &str) {
        match self {
            Progress::Spinner(bar) => bar.set_message(message.to_owned()),
            Progress::Lines { last } => {
                if last != message {
                    let _ = writeln!(std::io::stderr(), "waiting: {message}");
                    *last = message.to_owned();
                }
            }
        }
    }

    /// Removes the spinner (the final result is printed by the caller).
    pub fn finish(&self) {
        if let Progress::Spinner(bar) = self {
            bar.finish_and_clear();
        }
    }
}

/// Waits until the Workspace's current attempt is Ready (returns it) or failed, or the
/// timeout passes (errors that say what it was last waiting for).
pub async fn until_done(
    client: &Client,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<Fetched<Workspace>> {
    let mut progress = Progress::for_stderr();
    let outcome = follow(client, namespace, name, timeout, &mut progress).await;
    progress.finish();
    outcome
}

async fn follow(
    client: &Client,
    namespace: &str,
    name: &str,
    timeout: Duration,
    progress: &mut Progress,
) -> anyhow::Result<Fetched<Workspace>> {
    let deadline = Instant::now() + timeout;
    let mut last: String;
    loop {
        match objects::get::<Workspace>(client, Some(namespace), name).await {
            Ok(ws) => match wait_outcome(&ws.typed) {
                Wait::Ready(_) => return Ok(ws),
                Wait::Failed(message) => {
                    return Err(user_error(
                        format!("{name}: {message}"),
                        Some(format!(
                            "see kubectl provider status {name} -n {namespace}; after a failure: kubectl provider retry {name} -n {namespace}"
                        )),
                    ));
                }
                Wait::Waiting(message) => {
                    progress.update(&message);
                    last = message;
                }
            },
            // Gone, or no longer ours to read: waiting longer cannot help.
            Err(e) if is_final(&e) => return Err(e),
            // A blip (a restarting API server, a dropped connection): keep waiting.
            Err(e) => {
                last = format!(
                    "cannot read the Workspace: {}",
                    crate::report::report(&e, None).message
                );
                progress.update(&last);
            }
        }
        if Instant::now() + POLL > deadline {
            return Err(user_error(
                format!(
                    "timed out after {} waiting for {name}: {last}",
                    timeout_text(timeout)
                ),
                Some(format!(
                    "it goes on without you: kubectl provider status {name} -n {namespace}"
                )),
            ));
        }
        sleep(POLL).await;
    }
}

/// Waits until the Workspace is gone.
pub async fn until_deleted(
    client: &Client,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let mut progress = Progress::for_stderr();
    let deadline = Instant::now() + timeout;
    let outcome = loop {
        match objects::get_opt::<Workspace>(client, Some(namespace), name).await {
            Ok(None) => break Ok(()),
            Ok(Some(ws)) => {
                let finalizers = ws.typed.metadata.finalizers.clone().unwrap_or_default();
                progress.update(&if finalizers.is_empty() {
                    "being deleted".to_owned()
                } else {
                    format!("being deleted, waiting for {}", finalizers.join(", "))
                });
            }
            Err(e) if is_final(&e) => break Err(e),
            Err(_) => {}
        }
        if Instant::now() + POLL > deadline {
            break Err(user_error(
                format!(
                    "timed out after {} waiting for {name} to be deleted",
                    timeout_text(timeout)
                ),
                Some(
                    "the installer releases it once the current attempt's runner is revoked: kubectl provider status"
                        .to_owned(),
                ),
            ));
        }
        sleep(POLL).await;
    };
    progress.finish();
    outcome
}

fn is_final(error: &anyhow::Error) -> bool {
    if error.downcast_ref::<crate::report::UserError>().is_some() {
        return true;
    }
    error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<kube::Error>(),
            Some(kube::Error::Api(status)) if matches!(status.code, 401 | 403 | 404)
        )
    })
}
