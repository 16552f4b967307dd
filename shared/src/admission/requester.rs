//! Rule `requester_is_bounded`: a sealed plan records who asked for it (name, UID, groups
//! and extra attributes), a Workspace keeps several plans and repeats the name in every
//! attempt record, and the RBAC questions asked before sealing carry the same identity. An
//! identity larger than any an authenticator gives a person is refused before anything is
//! asked or sealed for it.

use k8s_openapi::api::authentication::v1::UserInfo;

use super::Denial;

/// The most bytes of name, UID, groups and extra attributes (keys and values) sealed into
/// a plan, counted as the API server stores them: hundreds of groups fit; the API server's
/// 3 MiB request limit for the RBAC questions, and etcd's 1.5 MiB for a Workspace with the
/// plans it keeps (the current one and up to five kept for rollback), stay far away.
pub const MAX_REQUESTER_BYTES: usize = 64 * 1024;

/// The most bytes of the requester's name, counted the same way: every attempt record
/// (twenty by default) repeats it besides the plans. OIDC subjects with their issuer fit.
pub const MAX_REQUESTER_NAME_BYTES: usize = 1024;

/// The requester's identity, if it is within [`MAX_REQUESTER_BYTES`] and its name within
/// [`MAX_REQUESTER_NAME_BYTES`], as the API server stores them.
pub fn requester_within_bounds(user: &UserInfo) -> Result<(), Denial> {
    let text = |s: &Option<String>| s.as_deref().map_or(0, stored_len);
    let name = text(&user.username);
    if name > MAX_REQUESTER_NAME_BYTES {
        return Err(Denial::RequesterTooLarge {
            what: "name",
            bytes: name,
            max: MAX_REQUESTER_NAME_BYTES,
        });
    }
    let groups: usize = user.groups.iter().flatten().map(|g| stored_len(g)).sum();
    let extra: usize = user
        .extra
        .iter()
        .flatten()
        .map(|(key, values)| stored_len(key) + values.iter().map(|v| stored_len(v)).sum::<usize>())
        .sum();
    let bytes = name + text(&user.uid) + groups + extra;
    if bytes > MAX_REQUESTER_BYTES {
        return Err(Denial::RequesterTooLarge {
            what: "name, UID, groups and extra attributes",
            bytes,
            max: MAX_REQUESTER_BYTES,
        });
    }
    Ok(())
}

/// The bytes `text` takes as a JSON string in the API server's encoding, quotes and a
/// separator included: Go's encoder writes `&`, `<`, `>`, control characters and U+2028 and
/// U+2029 as six-byte escapes, so a plan of 64 KiB of `&` would be stored as 384 KiB.
fn stored_len(text: &str) -> usize {
    3 + text
        .chars()
        .map(|c| match c {
            '&' | '<' | '>' | '\u{2028}' | '\u{2029}' => 6,
            '"' | '\\' => 2,
            c if c < ' ' => 6,
            c => c.len_utf8(),
        })
        .sum::<usize>()
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
        assert_eq!(requester_within_bounds(&user(1_021, 0, 0)), Ok(()));
        assert_eq!(requester_within_bounds(&UserInfo::default()), Ok(()));
    }

    #[test]
    fn every_part_of_the_identity_counts_toward_the_bound() {
        let over = MAX_REQUESTER_BYTES;
        for user in [
            user(1_022, 0, 0),
            user(1, over / 13 + 1, 0),
            user(1, 0, over),
        ] {
            let denial = requester_within_bounds(&user).unwrap_err();
            assert_eq!(denial.reason(), "RequesterTooLarge");
            assert_eq!(denial.field(), "request.userInfo");
            assert_eq!(denial.code(), 422);
            let said = denial.to_string();
            assert!(
                said.starts_with("request.userInfo: ") && said.contains("bytes of the requester"),
                "{said}"
            );
            assert!(said.contains("fewer groups"), "{said}");
        }
    }

    #[test]
    fn characters_the_api_server_escapes_count_as_it_stores_them() {
        let named = |name: String| UserInfo {
            username: Some(name),
            ..UserInfo::default()
        };
        // 200 ampersands are stored as 1,203 bytes.
        let said = requester_within_bounds(&named("&".repeat(200)))
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("1203 bytes of the requester's name as stored")
                && said.contains("at most 1024 are sealed"),
            "{said}"
        );
        assert!(requester_within_bounds(&named("a".repeat(1_000))).is_ok());
        // 11,000 ampersands in an extra value are stored as more than 64 KiB.
        let extra = UserInfo {
            extra: Some(BTreeMap::from([("k".into(), vec!["&".repeat(11_000)])])),
            ..UserInfo::default()
        };
        let said = requester_within_bounds(&extra).unwrap_err().to_string();
        assert!(said.contains("at most 65536 are sealed"), "{said}");
        assert_eq!(stored_len("a\"<\n\u{2028}é"), 3 + 1 + 2 + 6 + 6 + 6 + 2);
    }
}
