//! The webhook's allowlist of chart repositories.

/// Whether a chart repository URL is under one of the allowlisted prefixes. A prefix
/// matches whole path segments: `https://charts.example/team` allows
/// `https://charts.example/team/stable` but not `https://charts.example/team-evil`.
pub fn repository_allowed(repository: &str, allowlist: &[String]) -> bool {
    allowlist.iter().any(|prefix| {
        let prefix = prefix.trim_end_matches('/');
        !prefix.is_empty()
            && repository
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}
