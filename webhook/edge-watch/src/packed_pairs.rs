//! A small string map kept in two allocations: the keys and values one after another in
//! one text, and where each ends.
//!
//! The edge caches hold tens of thousands of label and annotation maps of a few entries
//! each. A `BTreeMap<String, String>` takes a node of eleven slots (about 550 bytes) for
//! the first entry and an allocation per string; this takes the text and four bytes per
//! string. Lookups scan, which is as fast for the handful of entries an object has.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct PackedPairs {
    /// Every key followed by its value, in the order given.
    text: Box<str>,
    /// Where each key, then its value, ends in `text`.
    ends: Box<[u32]>,
}

impl PackedPairs {
    /// Packs `pairs`. A map past 4 GiB (which no API object can hold) keeps the pairs that
    /// fit.
    pub(super) fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut text = String::new();
        let mut ends = Vec::new();
        for (key, value) in pairs {
            let (Ok(key_end), Ok(value_end)) = (
                u32::try_from(text.len() + key.len()),
                u32::try_from(text.len() + key.len() + value.len()),
            ) else {
                break;
            };
            text.push_str(key);
            text.push_str(value);
            ends.push(key_end);
            ends.push(value_end);
        }
        Self {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }

    /// The pairs, in the order packed.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.ends.chunks_exact(2).scan(0usize, |start, ends| {
            let (key_end, value_end) = (ends[0] as usize, ends[1] as usize);
            let key = &self.text[*start..key_end];
            let value = &self.text[key_end..value_end];
            *start = value_end;
            Some((key, value))
        })
    }

    /// The value of `key`.
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The pairs as the map the API types use.
    pub(super) fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_come_back_as_packed_and_are_found_by_key() {
        let map = BTreeMap::from([
            ("app.kubernetes.io/managed-by".to_owned(), "Helm".to_owned()),
            ("empty".to_owned(), String::new()),
            (String::new(), "empty key".to_owned()),
            ("ünïcode".to_owned(), "välue".to_owned()),
        ]);
        let packed = PackedPairs::new(map.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        assert_eq!(packed.to_map(), map);
        assert_eq!(packed.get("empty"), Some(""));
        assert_eq!(packed.get(""), Some("empty key"));
        assert_eq!(packed.get("ünïcode"), Some("välue"));
        assert_eq!(
            packed.get("app.kubernetes.io"),
            None,
            "a key's prefix is not a key"
        );
        assert!(!packed.is_empty());
        assert!(PackedPairs::new([]).is_empty());
        assert_eq!(PackedPairs::new([]).to_map(), BTreeMap::new());
    }

    #[test]
    fn a_key_and_value_that_run_together_are_still_told_apart() {
        let packed = PackedPairs::new([("ab", "c"), ("a", "bc")]);
        assert_eq!(
            packed.iter().collect::<Vec<_>>(),
            [("ab", "c"), ("a", "bc")]
        );
        assert_eq!(packed.get("a"), Some("bc"));
        assert_eq!(packed.get("abc"), None);
    }
}
