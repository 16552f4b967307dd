//! Rule `stored_values_are_sealed_again_without_a_write`: when the webhook may seal a plan
//! over stored values without writing to the hub.
//!
//! Every seal of stored values used to write: a create (or, when they were there, a
//! mark of the new seal and a read to check them), and a list to count the pending ones.
//! The webhook now follows the PlanValues objects' metadata, so it knows which exist,
//! which it has checked itself, and when a plan over them was last sealed. Values it
//! created or read back and checked, unchanged since (the same UID and generation: a
//! changed spec raises the generation), and marked sealed within the window, are sealed
//! again with no write. The webhook writes its window beside each mark, and the sweep
//! keeps an object for its grace from the mark plus that window: the latest a seal may
//! have relied on the mark.

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
    jiff::{SignedDuration, Timestamp},
};

use super::ANNOTATION_LAST_SEALED;

/// How long after its last mark stored values are sealed again without a new mark,
/// unless the webhook is told otherwise (`--plan-values-mark-window`): a tenth of the
/// sweep's default grace.
pub const MARK_WINDOW: SignedDuration = SignedDuration::from_secs(60);

/// What the webhook knows of the stored values a seal names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownValues {
    /// The webhook created them, or read them back and found the digest, and they have
    /// not changed since.
    pub checked: bool,
    /// When a plan over them was last marked sealed (else when they were created).
    pub last_sealed: Option<Timestamp>,
    /// Whether a Workspace owns them (a create must then check those owners still exist).
    pub owned: bool,
}

/// Whether a seal over `known` values, at `now`, needs no write: they are checked,
/// marked within `window` (a mark from the future, a skewed clock, does not count), and,
/// on a create, owned by no Workspace.
pub fn sealed_again_without_write(
    known: &KnownValues,
    now: Timestamp,
    window: SignedDuration,
    creating: bool,
) -> bool {
    known.checked
        && !(creating && known.owned)
        && known.last_sealed.is_some_and(|at| {
            let age = now.duration_since(at);
            age >= SignedDuration::ZERO && age < window
        })
}

/// On a PlanValues object: the webhook's mark window when it last marked them, in
/// seconds. A seal may have relied on that mark, without a new one, for that long.
pub const ANNOTATION_MARK_WINDOW: &str = "providers.platform.dev/mark-window-seconds";

/// The longest mark window read from an object: a larger value is taken as this.
pub const MAX_MARK_WINDOW: SignedDuration = SignedDuration::from_secs(60 * 60);

/// When the webhook last marked the stored values of `meta` sealed: its mark, else the
/// object's creation.
pub fn last_marked(meta: &ObjectMeta) -> Option<Timestamp> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_LAST_SEALED))
        .and_then(|at| at.parse().ok())
        .or(meta.creation_timestamp.as_ref().map(|t| t.0))
}

/// The latest a plan over the stored values of `meta` may have been sealed: the last mark
/// plus the window the webhook wrote with it (seals within it write no new mark). The
/// sweep's grace runs from here.
pub fn last_sealed_of(meta: &ObjectMeta) -> Option<Timestamp> {
    let window = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_MARK_WINDOW))
        .and_then(|seconds| seconds.parse::<u64>().ok())
        .map_or(SignedDuration::ZERO, |seconds| {
            SignedDuration::from_secs(i64::try_from(seconds).unwrap_or(i64::MAX))
                .min(MAX_MARK_WINDOW)
        });
    last_marked(meta).and_then(|at| at.checked_add(window).ok())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn known(checked: bool, last_sealed: Option<i64>, owned: bool) -> KnownValues {
        KnownValues {
            checked,
            last_sealed: last_sealed.map(at),
            owned,
        }
    }

    #[test]
    fn checked_values_marked_within_the_window_need_no_write() {
        let now = at(100);
        assert!(sealed_again_without_write(
            &known(true, Some(41), false),
            now,
            MARK_WINDOW,
            true
        ));
        assert!(sealed_again_without_write(
            &known(true, Some(41), true),
            now,
            MARK_WINDOW,
            false
        ));
    }

    #[test]
    fn anything_unsure_is_written() {
        let now = at(100);
        let window = MARK_WINDOW;
        let cases = [
            (
                known(false, Some(99), false),
                false,
                "not checked by this webhook",
            ),
            (
                known(true, Some(40), false),
                false,
                "marked a whole window ago",
            ),
            (known(true, None, false), false, "never marked"),
            (known(true, Some(101), false), false, "marked in the future"),
            (
                known(true, Some(99), true),
                true,
                "a create over owned values",
            ),
        ];
        for (known, creating, why) in cases {
            assert!(
                !sealed_again_without_write(&known, now, window, creating),
                "{why}"
            );
        }
    }

    #[test]
    fn the_mark_is_the_annotation_else_the_creation_and_seals_may_follow_it_by_its_window() {
        let mut meta = ObjectMeta {
            creation_timestamp: Some(Time(at(1))),
            ..ObjectMeta::default()
        };
        assert_eq!(last_marked(&meta), Some(at(1)));
        assert_eq!(
            last_sealed_of(&meta),
            Some(at(1)),
            "no window: marked on every seal"
        );
        let annotate = |mark: &str, window: &str| {
            Some(
                [
                    (ANNOTATION_LAST_SEALED.to_owned(), mark.to_owned()),
                    (ANNOTATION_MARK_WINDOW.to_owned(), window.to_owned()),
                ]
                .into_iter()
                .collect(),
            )
        };
        meta.annotations = annotate(&at(7).to_string(), "60");
        assert_eq!(last_marked(&meta), Some(at(7)));
        assert_eq!(last_sealed_of(&meta), Some(at(67)));
        meta.annotations = annotate("yesterday", "ten");
        assert_eq!(last_marked(&meta), Some(at(1)), "an unreadable mark");
        assert_eq!(last_sealed_of(&meta), Some(at(1)), "an unreadable window");
        meta.annotations = annotate(&at(7).to_string(), "99999999999");
        assert_eq!(
            last_sealed_of(&meta),
            at(7).checked_add(MAX_MARK_WINDOW).ok(),
            "a window past the most is the most"
        );
    }
}
