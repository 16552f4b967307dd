//! Rule `unfollowed_kinds_are_said`: a kind of the installed release's objects that the
//! installer cannot follow on the edge is named on the Workspace with why and what to do,
//! so that "in sync" is never read where drift cannot be seen.

use std::collections::BTreeMap;

use crate::{
    api::{Plan, UnfollowedKind},
    installer::{
        ObjectSeen, Unfollowed, action::Note, decision_draft::DecisionDraft,
        release_objects::ReleaseObject,
    },
};

/// The most kinds named; a release with more names the first ones.
pub const MAX_UNFOLLOWED: usize = 16;

impl DecisionDraft<'_> {
    /// Names on the Workspace the kinds of the installed revision (recorded in
    /// `record_uid`) that are not followed, with an Event when the list changes to a new
    /// non-empty one.
    pub(super) fn record_unfollowed(&mut self, plan: &Plan, record_uid: &str) {
        let Some(found) = self
            .observation()
            .edge_objects
            .as_ref()
            .and_then(|edge| edge.objects.as_ref())
            .filter(|followed| followed.record_uid == record_uid)
            .map(|followed| unfollowed_kinds(&followed.objects, &plan.edge_name))
        else {
            return;
        };
        if !found.is_empty() && found != self.status.unfollowed {
            let said: Vec<&str> = found.iter().map(|k| k.message.as_str()).collect();
            self.event(Note::warning("KindsNotFollowed", said.join("; ")));
        }
        self.status.unfollowed = found;
    }
}

/// The kinds of `objects` that are not followed, by apiVersion and kind, with the count of
/// their objects. `edge` names the edge in the messages.
pub fn unfollowed_kinds(
    objects: &[(ReleaseObject, ObjectSeen)],
    edge: &str,
) -> Vec<UnfollowedKind> {
    let mut kinds: BTreeMap<(&str, &str), (Unfollowed, i64)> = BTreeMap::new();
    for (object, seen) in objects {
        if let ObjectSeen::Unfollowed(why) = seen {
            kinds
                .entry((object.api_version.as_str(), object.kind.as_str()))
                .or_insert((*why, 0))
                .1 += 1;
        }
    }
    kinds
        .into_iter()
        .take(MAX_UNFOLLOWED)
        .map(|((api_version, kind), (why, objects))| UnfollowedKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            objects,
            reason: reason(why).to_owned(),
            message: message(why, api_version, kind, edge),
        })
        .collect()
}

fn reason(why: Unfollowed) -> &'static str {
    match why {
        Unfollowed::ListRefused => "ListRefused",
        Unfollowed::NotServed => "NotServed",
        Unfollowed::NotRunnerWritable => "NotRunnerWritable",
        Unfollowed::TooManyKinds => "TooManyKinds",
    }
}

fn message(why: Unfollowed, api_version: &str, kind: &str, edge: &str) -> String {
    match why {
        Unfollowed::ListRefused => format!(
            "edits of {kind} ({api_version}) objects are not seen: edge {edge} does not let the installer list them; the edge admin adds the kind to the ClusterRole providers-edge-namespace (list, watch)"
        ),
        Unfollowed::NotServed => format!(
            "edits of {kind} ({api_version}) objects are not seen: edge {edge}'s discovery found no namespaced kind of that name (a cluster-scoped kind, one not installed there, or discovery failing: asked again within 10 minutes)"
        ),
        Unfollowed::NotRunnerWritable => format!(
            "edits of {kind} ({api_version}) objects are not seen: the release's record on the edge names them, and the plan's execution rules do not let the runner write them, so the installer does not follow them; check that the chart renders them (anyone who may write Secrets in the release namespace can rewrite the record) before adding the kind to the Recipe's spec.execution"
        ),
        Unfollowed::TooManyKinds => format!(
            "edits of {kind} ({api_version}) objects are not seen: the release namespace on edge {edge} follows as many kinds as the installer keeps per namespace"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: &str, name: &str) -> ReleaseObject {
        ReleaseObject {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: "hello".into(),
            name: name.into(),
        }
    }

    #[test]
    fn each_unfollowed_kind_is_named_once_with_its_count_and_what_to_do() {
        let objects = vec![
            (
                object("LimitRange", "a"),
                ObjectSeen::Unfollowed(Unfollowed::ListRefused),
            ),
            (
                object("LimitRange", "b"),
                ObjectSeen::Unfollowed(Unfollowed::ListRefused),
            ),
            (object("ConfigMap", "c"), ObjectSeen::Missing),
            (object("Service", "d"), ObjectSeen::Unknown),
        ];
        let kinds = unfollowed_kinds(&objects, "edge-1");
        assert_eq!(kinds.len(), 1, "{kinds:?}");
        assert_eq!(kinds[0].kind, "LimitRange");
        assert_eq!(kinds[0].objects, 2);
        assert_eq!(kinds[0].reason, "ListRefused");
        assert!(
            kinds[0].message.contains("edge edge-1")
                && kinds[0].message.contains("providers-edge-namespace"),
            "{}",
            kinds[0].message
        );
    }

    #[test]
    fn at_most_the_bound_of_kinds_is_named() {
        let objects: Vec<_> = (0..40)
            .map(|i| {
                (
                    object(&format!("Kind{i:02}"), "x"),
                    ObjectSeen::Unfollowed(Unfollowed::NotServed),
                )
            })
            .collect();
        assert_eq!(unfollowed_kinds(&objects, "e").len(), MAX_UNFOLLOWED);
    }
}
