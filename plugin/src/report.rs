//! Turning a failure into what the user reads: one `error:` line, as the API server or
//! the webhook wrote it, and at most a few `hint:` lines. No chains of wrappers.

use kube::core::Status;

/// A failure the plugin itself explains; its message is final.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct UserError {
    pub message: String,
    pub hint: Option<String>,
}

/// A [`UserError`] as an `anyhow::Error`.
pub fn user_error(message: impl Into<String>, hint: Option<String>) -> anyhow::Error {
    UserError {
        message: message.into(),
        hint,
    }
    .into()
}

/// What is printed for a failure.
#[derive(Debug, PartialEq, Eq)]
pub struct Report {
    pub message: String,
    pub hints: Vec<String>,
}

impl Report {
    /// The lines for stderr.
    pub fn lines(&self) -> Vec<String> {
        std::iter::once(format!("error: {}", self.message))
            .chain(self.hints.iter().map(|h| format!("hint: {h}")))
            .collect()
    }
}

/// The report for any failure. `server` is the API server's URL, for transport errors.
pub fn report(error: &anyhow::Error, server: Option<&str>) -> Report {
    if let Some(user) = error.downcast_ref::<UserError>() {
        return Report {
            message: one_line(&user.message),
            hints: user.hint.iter().cloned().collect(),
        };
    }
    for cause in error.chain() {
        if let Some(kube::Error::Api(status)) = cause.downcast_ref::<kube::Error>() {
            return from_status(status);
        }
    }
    let transport = error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<kube::Error>(),
            Some(kube::Error::HyperError(_) | kube::Error::Service(_))
        )
    });
    if transport {
        let timed_out = error.chain().any(|cause| {
            cause.is::<tokio::time::error::Elapsed>()
                || cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut)
        });
        // The innermost cause says what actually went wrong (refused, TLS, DNS).
        let root = if timed_out {
            "no answer within the request timeout (--request-timeout)".to_owned()
        } else {
            error
                .chain()
                .last()
                .map(|c| c.to_string())
                .unwrap_or_default()
        };
        let at = server.map(|s| format!(" at {s}")).unwrap_or_default();
        return Report {
            message: one_line(&format!(
                "cannot reach the Kubernetes API server{at}: {root}"
            )),
            hints: vec![
                "check the kubeconfig's server and credentials (--kubeconfig, --context)"
                    .to_owned(),
            ],
        };
    }
    Report {
        message: one_line(&format!("{error:#}")),
        hints: Vec::new(),
    }
}

/// The report for a Status the API server returned.
pub fn from_status(status: &Status) -> Report {
    let message = if status.message.is_empty() {
        format!("the API server answered {} {}", status.code, status.reason)
    } else {
        one_line(webhook_message(&status.message))
    };
    let mut hints = Vec::new();
    if status.code == 409 && message.starts_with("Apply failed") {
        hints.push(
            "another field manager (for example a GitOps tool) owns these fields: change them \
             where it declares them, or take them over with kubectl provider set NAME ... --force-conflicts"
                .to_owned(),
        );
    }
    if status.code == 401 {
        hints.push(
            "the API server did not accept your credentials: check the kubeconfig's user"
                .to_owned(),
        );
    }
    Report { message, hints }
}

/// The message an admission webhook wrote, without the API server's
/// `admission webhook "NAME" denied the request: ` prefix.
pub fn webhook_message(message: &str) -> &str {
    const MARK: &str = " denied the request: ";
    if message.starts_with("admission webhook ")
        && let Some(at) = message.find(MARK)
    {
        return &message[at + MARK.len()..];
    }
    message
}

/// Collapses a message onto one line.
pub fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> Status {
        Status::failure(message, reason).with_code(code)
    }

    #[test]
    fn a_webhook_denial_is_the_webhook_s_own_words() {
        let error: anyhow::Error = kube::Error::Api(Box::new(status(
            403,
            "Forbidden",
            "admission webhook \"validate.providers.platform.dev\" denied the request: spec.values is pinned while attempt 1 runs",
        )))
        .into();
        let error = error.context("applying workspace demo");
        assert_eq!(
            report(&error, None).lines(),
            ["error: spec.values is pinned while attempt 1 runs"]
        );
    }

    #[test]
    fn other_api_errors_keep_the_server_s_message() {
        let reported = from_status(&status(
            404,
            "NotFound",
            "workspaces.providers.platform.dev \"x\" not found",
        ));
        assert_eq!(
            reported.message,
            "workspaces.providers.platform.dev \"x\" not found"
        );
        assert!(reported.hints.is_empty());
    }

    #[test]
    fn an_apply_conflict_says_who_to_ask() {
        let reported = from_status(&status(
            409,
            "Conflict",
            "Apply failed with 1 conflict: conflict with \"argocd\": .spec.values.replicaCount",
        ));
        assert!(
            reported.hints[0].contains("--force-conflicts"),
            "{reported:?}"
        );
    }

    #[test]
    fn messages_are_one_line() {
        assert_eq!(one_line("a\n  b\n\nc "), "a b c");
    }

    #[test]
    fn user_errors_are_printed_as_written() {
        let error = user_error("retry needs a failed attempt", Some("wait".to_owned()));
        assert_eq!(
            report(&error, None).lines(),
            ["error: retry needs a failed attempt", "hint: wait"]
        );
    }

    #[test]
    fn anything_else_is_one_line_of_its_causes() {
        let error = anyhow::anyhow!("inner").context("outer");
        assert_eq!(report(&error, None).message, "outer: inner");
    }
}
