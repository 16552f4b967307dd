//! Rule `requester_is_bounded`: a sealed plan records who asked for it (name, UID, groups
//! and extra attributes), a Workspace keeps several plans, and the RBAC questions asked
//! before sealing carry the same identity. An identity larger than any an authenticator
//! gives a person is refused before anything is asked or sealed for it.

use k8s_openapi::api::authentication::v1::UserInfo;

use super::Denial;

/// The most bytes of name, UID, groups and extra attributes (keys and values) sealed into
/// a plan: hundreds of groups fit; the API server's 3 MiB request limit for the RBAC
/// questions, and etcd's 1.5 MiB for a Workspace with its kept plans, stay far away.
pub const MAX_REQUESTER_BYTES: usize = 64 * 1024;

/// The requester's identity, if it is within [`MAX_REQUESTER_BYTES`].
pub fn requester_within_bounds(user: &UserInfo) -> Result<(), Denial> {
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let groups: usize = user.groups.iter().flatten().map(String::len).sum();
    let extra: usize = user
        .extra
        .iter()
        .flatten()
        .map(|(key, values)| key.len() + values.iter().map(String::len).sum::<usize>())
        .sum();
    let bytes = text(&user.username) + text(&user.uid) + groups + extra;
    if bytes > MAX_REQUESTER_BYTES {
        return Err(Denial::RequesterTooLarge {
            bytes,
            max: MAX_REQUESTER_BYTES,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn user(name: usize, groups: usize, extra: usize) -> UserInfo {
        UserInfo {
            username: Some("n".repeat(name)),
            uid: Some("u".into()),
            groups: Some(vec!["g".repeat(10); groups]),
            extra: Some(BTreeMap::from([("k".into(), vec!["v".repeat(extra)])])),
        }
    }

    #[test]
    fn an_identity_with_hundreds_of_groups_is_sealed() {
        assert_eq!(requester_within_bounds(&user(64, 1_000, 1_000)), Ok(()));
        assert_eq!(requester_within_bounds(&UserInfo::default()), Ok(()));
    }

    #[test]
    fn every_part_of_the_identity_counts_toward_the_bound() {
        let over = MAX_REQUESTER_BYTES;
        for user in [
            user(over, 0, 0),
            user(1, over / 10 + 1, 0),
            user(1, 0, over),
        ] {
            let denial = requester_within_bounds(&user).unwrap_err();
            assert_eq!(denial.reason(), "RequesterTooLarge");
            assert_eq!(denial.field(), "request.userInfo");
            assert_eq!(denial.code(), 422);
            let said = denial.to_string();
            assert!(said.starts_with("request.userInfo: "), "{said}");
            assert!(said.contains("at most 65536"), "{said}");
            assert!(said.contains("fewer groups"), "{said}");
        }
    }
}
