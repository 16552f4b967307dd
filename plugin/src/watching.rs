//! Watching Workspaces with kube-runtime's watcher: the settings every watch here uses,
//! and the watched API.

use std::time::Duration;

use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject},
    runtime::watcher,
};
use providers_shared::api::Workspace;

/// How long the API server keeps one watch request open when the client has no read
/// timeout (kube-runtime's own default).
const WATCH_SECONDS: u32 = 290;

/// The seconds after which the API server ends each watch request: before the client's
/// read timeout (`--request-timeout`) would cut a quiet watch, so a quiet watch is renewed
/// instead of failing.
pub fn watch_seconds(read_timeout: Option<Duration>) -> u32 {
    match read_timeout {
        None => WATCH_SECONDS,
        Some(limit) => {
            let seconds = u32::try_from(limit.as_secs()).unwrap_or(u32::MAX);
            seconds.saturating_sub(1).clamp(1, WATCH_SECONDS)
        }
    }
}

/// The watcher settings for a client with `read_timeout`.
pub fn watcher_config(read_timeout: Option<Duration>) -> watcher::Config {
    watcher::Config::default().timeout(watch_seconds(read_timeout))
}

/// The watcher settings for one Workspace by name.
pub fn one_workspace(read_timeout: Option<Duration>, name: &str) -> watcher::Config {
    watcher_config(read_timeout).fields(&format!("metadata.name={name}"))
}

/// The Workspaces of `namespace` (every namespace for `None`), read as raw objects so
/// `-o yaml` and `-o json` print fields this plugin does not know.
pub fn workspaces(client: &Client, namespace: Option<&str>) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<Workspace>(&());
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_ends_before_the_read_timeout() {
        assert_eq!(watch_seconds(None), 290);
        assert_eq!(watch_seconds(Some(Duration::from_secs(30))), 29);
        assert_eq!(watch_seconds(Some(Duration::from_secs(1))), 1);
        assert_eq!(watch_seconds(Some(Duration::from_millis(300))), 1);
        assert_eq!(watch_seconds(Some(Duration::from_secs(3600))), 290);
        let config = one_workspace(None, "demo");
        assert_eq!(config.field_selector.as_deref(), Some("metadata.name=demo"));
        assert_eq!(config.timeout, Some(290));
    }
}
