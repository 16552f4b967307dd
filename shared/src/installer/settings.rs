//! The installer's settings and the defaults it runs with.

/// The installer's settings, from its command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The image of the runner's container (it must provide `helm`).
    pub helm_image: String,
    /// Helm's `--wait` strategy: `watcher`, `hookOnly` or `legacy`.
    pub helm_wait: String,
    /// The Job's `activeDeadlineSeconds`.
    pub job_deadline_seconds: i64,
    /// How long a preparation may stay without its Job before the next leader redoes it.
    pub preparation_ttl_seconds: i64,
    /// How many attempt records a Workspace's status keeps.
    pub attempt_history: usize,
    /// Of how many succeeded attempts the status keeps the plan, for a rollback (fewer
    /// when their plans pass [`KEPT_PLANS_BYTES`]).
    pub rollback_history: usize,
    /// How often an installed release is compared with what its attempt left, in seconds
    /// (0: never). Changes of Helm's records on the edge are checked as they are seen.
    pub drift_interval_seconds: u64,
    /// How often an installed release's objects are compared with its manifest by their
    /// contents, in seconds (0: never); also right after every attempt.
    pub content_check_interval_seconds: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            helm_image: DEFAULT_HELM_IMAGE.to_owned(),
            helm_wait: "watcher".to_owned(),
            job_deadline_seconds: 900,
            preparation_ttl_seconds: 300,
            attempt_history: 20,
            rollback_history: 10,
            drift_interval_seconds: 300,
            content_check_interval_seconds: 1800,
        }
    }
}

/// The most the plans kept for a rollback may weigh together in a Workspace's status, as
/// JSON: what a long history of large identities and tenant values could otherwise add.
/// The newest kept plan stays whatever it weighs.
pub const KEPT_PLANS_BYTES: usize = 128 * 1024;

/// The runner image used unless configured: alpine/helm, pinned to the Helm release the
/// tests run.
pub const DEFAULT_HELM_IMAGE: &str = "docker.io/alpine/helm:4.3.2";
