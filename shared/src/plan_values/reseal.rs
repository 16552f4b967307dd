//! Rule `stored_values_are_sealed_again_without_a_write`: when the webhook may seal a plan
//! over stored values without writing to the hub.
//!
//! Every seal of stored values used to write: a create (or, when they were there, a
//! mark of the new seal and a read to check them), and a list to count the pending ones.
//! The webhook now follows the PlanValues objects' metadata, so it knows which exist,
//! which it has checked itself, and when a plan over them was last sealed. Values it
//! created or read back and checked, unchanged since (the same UID and generation: a
//! changed spec raises the generation), and marked sealed within the window, are sealed
//! again with no write. The sweep keeps an object for its grace after the last mark,
//! and a mark at most a window old still leaves it the grace less the window: the window
//! must stay well under the installer's `--plan-values-grace`.

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

/// When a plan over the stored values of `meta` was last sealed: the webhook's mark, else
/// the object's creation.
pub fn last_sealed_of(meta: &ObjectMeta) -> Option<Timestamp> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_LAST_SEALED))
        .and_then(|at| at.parse().ok())
        .or(meta.creation_timestamp.as_ref().map(|t| t.0))
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
    fn the_mark_is_the_annotation_else_the_creation() {
        let mut meta = ObjectMeta {
            creation_timestamp: Some(Time(at(1))),
            ..ObjectMeta::default()
        };
        assert_eq!(last_sealed_of(&meta), Some(at(1)));
        meta.annotations = Some(
            [(ANNOTATION_LAST_SEALED.to_owned(), at(7).to_string())]
                .into_iter()
                .collect(),
        );
        assert_eq!(last_sealed_of(&meta), Some(at(7)));
        meta.annotations = Some(
            [(ANNOTATION_LAST_SEALED.to_owned(), "yesterday".to_owned())]
                .into_iter()
                .collect(),
        );
        assert_eq!(last_sealed_of(&meta), Some(at(1)), "an unreadable mark");
    }
}
