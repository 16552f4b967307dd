//! `--wait`: follow a Workspace until its attempt is Ready or has failed, showing progress
//! on stderr (a spinner on a terminal, one plain line per change when piped).
//!
//! It watches the one Workspace (a kube-runtime watcher with the field selector
//! `metadata.name=NAME`), so it sees every change the moment the API server has it.

use std::{
    io::{IsTerminal, Write},
    pin::pin,
    time::Duration,
};

use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use kube::{
    api::DynamicObject,
    runtime::{WatchStreamExt, watcher, watcher::Event},
};
use providers_shared::api::Workspace;
use tokio::time::{Instant, sleep_until};

use crate::{
    attempt_state::wait_outcome::{Wait, wait_outcome},
    connect::Connection,
    duration::timeout_text,
    objects::{self, Fetched},
    report::user_error,
    watching,
};

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

/// What the watch of one Workspace saw.
enum Seen {
    /// The Workspace as it is now.
    Object(Box<DynamicObject>),
    /// It is gone (deleted, or not there when the watch started).
    Gone,
    /// The watch failed; the watcher tries again after a pause.
    Failed(anyhow::Error),
}

/// Waits until the Workspace's current attempt is Ready (returns it) or failed, or the
/// timeout passes (errors that say what it was last waiting for).
pub async fn until_done(
    conn: &Connection,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<Fetched<Workspace>> {
    let mut progress = Progress::for_stderr();
    let outcome = follow(conn, namespace, name, timeout, &mut progress).await;
    progress.finish();
    outcome
}

async fn follow(
    conn: &Connection,
    namespace: &str,
    name: &str,
    timeout: Duration,
    progress: &mut Progress,
) -> anyhow::Result<Fetched<Workspace>> {
    let deadline = Instant::now() + timeout;
    let mut last = "no answer from the API server yet".to_owned();
    let mut changes = pin!(watch_one(conn, namespace, name));
    loop {
        let seen = tokio::select! {
            seen = changes.next() => seen,
            () = sleep_until(deadline) => {
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
        };
        match seen {
            Some(Seen::Object(object)) => {
                let ws = objects::parse::<Workspace>(*object)?;
                match wait_outcome(&ws.typed) {
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
                }
            }
            // Gone, or no longer ours to read: waiting longer cannot help.
            Some(Seen::Gone) | None => {
                return Err(objects::not_found::<Workspace>(Some(namespace), name));
            }
            Some(Seen::Failed(error)) if is_final(&error) => return Err(error),
            // A blip (a restarting API server, a dropped connection): keep waiting.
            Some(Seen::Failed(error)) => {
                last = format!(
                    "cannot read the Workspace: {}",
                    crate::report::report(&error, None).message
                );
                progress.update(&last);
            }
        }
    }
}

/// Waits until the Workspace is gone.
pub async fn until_deleted(
    conn: &Connection,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let mut progress = Progress::for_stderr();
    let deadline = Instant::now() + timeout;
    let mut changes = pin!(watch_one(conn, namespace, name));
    let outcome = loop {
        let seen = tokio::select! {
            seen = changes.next() => seen,
            () = sleep_until(deadline) => break Err(user_error(
                format!(
                    "timed out after {} waiting for {name} to be deleted",
                    timeout_text(timeout)
                ),
                Some(
                    "the installer releases it once the current attempt's runner is revoked: kubectl provider status"
                        .to_owned(),
                ),
            )),
        };
        match seen {
            Some(Seen::Gone) | None => break Ok(()),
            Some(Seen::Object(object)) => {
                let finalizers = object.metadata.finalizers.clone().unwrap_or_default();
                progress.update(&if finalizers.is_empty() {
                    "being deleted".to_owned()
                } else {
                    format!("being deleted, waiting for {}", finalizers.join(", "))
                });
            }
            Some(Seen::Failed(error)) if is_final(&error) => break Err(error),
            Some(Seen::Failed(_)) => {}
        }
    };
    progress.finish();
    outcome
}

/// Every change of one Workspace, from its current state on. The watcher resumes after a
/// failure (with kube-runtime's backoff) and lists again when it must.
fn watch_one(
    conn: &Connection,
    namespace: &str,
    name: &str,
) -> impl futures::Stream<Item = Seen> + use<> {
    let api = watching::workspaces(&conn.client, Some(namespace));
    let config = watching::one_workspace(conn.read_timeout, name);
    // Whether the object was in the list that the current (re)start of the watch began with.
    let mut listed = false;
    watcher(api, config)
        .default_backoff()
        .filter_map(move |event| {
            let seen = match event {
                Ok(Event::Init) => {
                    listed = false;
                    None
                }
                Ok(Event::InitApply(object)) => {
                    listed = true;
                    Some(Seen::Object(Box::new(object)))
                }
                Ok(Event::Apply(object)) => Some(Seen::Object(Box::new(object))),
                Ok(Event::InitDone) => (!listed).then_some(Seen::Gone),
                Ok(Event::Delete(_)) => Some(Seen::Gone),
                Err(error) => Some(Seen::Failed(error.into())),
            };
            std::future::ready(seen)
        })
}

/// Whether an error means waiting longer cannot help: the plugin's own, or the API server
/// refusing (401, 403) or not knowing (404) what is asked.
pub fn is_final(error: &anyhow::Error) -> bool {
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
