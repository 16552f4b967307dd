//! Crash points for tests: `PROVIDERS_FAULT_EXIT_AFTER=<action>[,<action>...]` makes the
//! process exit (code 86) right after one of the named actions succeeds, the way a kill at
//! the worst moment would. Unset in production; the action names are those of
//! `providers::installer::Action::name`.

use std::sync::OnceLock;

/// The variable that arms the crash points.
pub const VARIABLE: &str = "PROVIDERS_FAULT_EXIT_AFTER";

fn armed() -> &'static [String] {
    static ARMED: OnceLock<Vec<String>> = OnceLock::new();
    ARMED.get_or_init(|| {
        std::env::var(VARIABLE)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// Called after each successful action.
pub fn after(action: &str) {
    if armed().iter().any(|a| a == action) {
        tracing::error!(action, "{VARIABLE}: exiting right after {action}");
        std::process::exit(86);
    }
}
