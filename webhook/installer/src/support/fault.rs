//! Crash points for tests: `PROVIDERS_FAULT_EXIT_AFTER=<action>[,<action>...]` makes the
//! process exit (code 86) right after one of the named actions succeeds, the way a kill at
//! the worst moment would; `PROVIDERS_FAULT_FREEZE_AFTER=<action>[,...]` makes it stop
//! itself (SIGSTOP, once) right there, the way a paused VM or a long stall would, until
//! the test sends SIGCONT. Unset in production; the action names are those of
//! `providers_shared::installer::Action::name`.

use std::sync::{
    OnceLock,
    atomic::{AtomicBool, Ordering},
};

/// The variable that arms the crash points.
pub const VARIABLE: &str = "PROVIDERS_FAULT_EXIT_AFTER";
/// The variable that arms the freeze points.
pub const FREEZE: &str = "PROVIDERS_FAULT_FREEZE_AFTER";

fn actions(variable: &str) -> Vec<String> {
    std::env::var(variable)
        .map(|v| {
            v.split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

fn armed() -> &'static [String] {
    static ARMED: OnceLock<Vec<String>> = OnceLock::new();
    ARMED.get_or_init(|| actions(VARIABLE))
}

fn freezes() -> &'static [String] {
    static FREEZES: OnceLock<Vec<String>> = OnceLock::new();
    FREEZES.get_or_init(|| actions(FREEZE))
}

/// Called after each successful action.
pub fn after(action: &str) {
    if armed().iter().any(|a| a == action) {
        tracing::error!(action, "{VARIABLE}: exiting right after {action}");
        std::process::exit(86);
    }
    static FROZEN: AtomicBool = AtomicBool::new(false);
    if freezes().iter().any(|a| a == action) && !FROZEN.swap(true, Ordering::SeqCst) {
        tracing::error!(
            action,
            "{FREEZE}: stopping this process right after {action}"
        );
        // `kill` returns once the signal is sent, but the stop reaches each thread when it
        // next enters the kernel: this thread sleeps there meanwhile, so that it does no
        // more work (no "running again", no next action) before the process is stopped.
        // Past a freeze longer than the sleep, it goes on as soon as the process runs again.
        let _ = std::process::Command::new("kill")
            .args(["-STOP", &std::process::id().to_string()])
            .status();
        std::thread::sleep(std::time::Duration::from_secs(1));
        tracing::warn!(action, "{FREEZE}: running again");
    }
}
