//! The static users of a test control plane.

use serde::{Deserialize, Serialize};

/// A user the apiserver knows by a static bearer token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum User {
    /// In `system:masters`: bypasses RBAC. Sets the control plane up, like envtest's admin.
    Admin,
    /// The platform team: bound to `cluster-admin` through RBAC.
    PlatformAdmin,
    /// A tenant with the tenant role in namespace `org-a`.
    Alice,
    /// A tenant with the tenant role in namespace `org-b`.
    Bob,
}

impl User {
    pub const ALL: [User; 4] = [User::Admin, User::PlatformAdmin, User::Alice, User::Bob];

    /// The user name the apiserver authenticates.
    pub fn name(self) -> &'static str {
        match self {
            User::Admin => "admin",
            User::PlatformAdmin => "platform-admin",
            User::Alice => "alice",
            User::Bob => "bob",
        }
    }

    /// The groups in the token file (besides `system:authenticated`).
    pub fn groups(self) -> &'static [&'static str] {
        match self {
            User::Admin => &["system:masters"],
            User::PlatformAdmin => &["platform-admins"],
            User::Alice | User::Bob => &["tenants"],
        }
    }

    /// The organization namespace a tenant works in.
    pub fn org(self) -> Option<&'static str> {
        match self {
            User::Alice => Some("org-a"),
            User::Bob => Some("org-b"),
            _ => None,
        }
    }
}
