//! Drift reasons: the Drifted condition's reason.

/// No revision of the release is left on the edge: it was uninstalled.
pub const RELEASE_MISSING: &str = "ReleaseMissing";
/// A revision the installer did not make is the newest, or the installed one changed.
pub const RELEASE_CHANGED: &str = "ReleaseChanged";
/// The release was uninstalled and installed again outside the installer.
pub const RELEASE_REPLACED: &str = "ReleaseReplaced";
/// The release is as the installed attempt left it.
pub const IN_SYNC: &str = "ReleaseInSync";
/// An object of the release was changed by someone else than the release.
pub const OBJECT_CHANGED: &str = "ObjectChanged";
/// An object of the release is gone.
pub const OBJECT_DELETED: &str = "ObjectDeleted";
