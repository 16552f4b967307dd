//! The orphan sweep: what belongs to no Workspace, and what is removed.

use std::collections::BTreeMap;

use super::*;

fn object(uid: &str, owner: &str, attempt: &str) -> ObjectState {
    let mut labels = BTreeMap::from([
        (
            names::LABEL_MANAGED_BY.to_owned(),
            names::MANAGED_BY.to_owned(),
        ),
        (names::LABEL_WORKSPACE_UID.to_owned(), owner.to_owned()),
    ]);
    if !attempt.is_empty() {
        labels.insert(names::LABEL_ATTEMPT_ID.to_owned(), attempt.to_owned());
    }
    ObjectState {
        uid: uid.into(),
        labels,
        annotations: BTreeMap::from([(
            names::ANNOTATION_WORKSPACE.to_owned(),
            "org-a/gone".to_owned(),
        )]),
        ..Default::default()
    }
}

fn listed(found: Found, name: &str, object: ObjectState) -> ListedObject {
    ListedObject {
        found,
        namespace: if found == Found::Namespace {
            String::new()
        } else {
            "ns".into()
        },
        name: name.into(),
        object,
    }
}

#[test]
fn an_orphans_identity_and_job_go_and_then_its_namespace_is_released() {
    let mut job = object("job", "gone", "a1");
    job.finalizers = vec![names::FINALIZER.into()];
    let items = vec![
        listed(Found::Namespace, "ns", object("ns", "gone", "")),
        listed(
            Found::Attempt(Kind::ServiceAccount),
            "r",
            object("sa", "gone", "a1"),
        ),
        listed(
            Found::Attempt(Kind::Role),
            "r",
            object("role", "gone", "a1"),
        ),
        listed(
            Found::Attempt(Kind::RoleBinding),
            "r",
            object("rb", "gone", "a1"),
        ),
        listed(
            Found::Attempt(Kind::Secret),
            "v",
            object("values", "gone", "a1"),
        ),
        listed(
            Found::Attempt(Kind::Secret),
            "cred",
            object("cred", "gone", ""),
        ),
        listed(Found::Attempt(Kind::Job), "j", job),
    ];
    let sweep = sweep(&items, &HashSet::new());
    let steps: Vec<String> = sweep
        .actions
        .iter()
        .map(|a| match a {
            SweepAction::ReleaseJob { name, .. } => format!("release-job {name}"),
            SweepAction::Delete(d) => format!("delete {:?} {}", d.kind, d.uid),
            SweepAction::ReleaseNamespace { name, .. } => format!("release-namespace {name}"),
        })
        .collect();
    assert_eq!(
        steps,
        [
            "delete ServiceAccount sa",
            "delete Role role",
            "delete RoleBinding rb",
            "delete Secret values",
            "release-job j",
            "delete Job job",
            "release-namespace ns",
        ]
    );
    assert_eq!(sweep.orphans["gone"], ("org-a/gone".to_owned(), 6));
}

#[test]
fn what_belongs_to_a_live_workspace_stays() {
    let items = vec![
        listed(Found::Namespace, "ns", object("ns", "live", "")),
        listed(Found::Attempt(Kind::Job), "j", object("job", "live", "a1")),
    ];
    let live = HashSet::from(["live".to_owned()]);
    assert_eq!(sweep(&items, &live), Sweep::default());
}

#[test]
fn released_namespaces_and_objects_being_deleted_are_left_alone() {
    let mut released = object("ns", "gone", "");
    released
        .labels
        .insert(names::LABEL_RELEASED.into(), "true".into());
    let mut deleting = object("sa", "gone", "a1");
    deleting.deleting = true;
    let items = vec![
        listed(Found::Namespace, "ns", released),
        listed(Found::Attempt(Kind::ServiceAccount), "r", deleting),
    ];
    assert_eq!(sweep(&items, &HashSet::new()), Sweep::default());
}

/// Rule `sweep_acts_only_in_release_namespaces`: an object labelled as an orphan's attempt
/// outside every namespace the installer labelled (planted by anyone who may create a
/// ServiceAccount somewhere on the edge) is not acted on; the orphan's own objects are.
#[test]
fn objects_outside_the_installers_namespaces_are_left_alone() {
    let mut planted = listed(
        Found::Attempt(Kind::ServiceAccount),
        "poison",
        object("poison", "ghost", "ghost"),
    );
    planted.namespace = "default".into();
    let items = vec![
        listed(Found::Namespace, "ns", object("ns", "gone", "")),
        listed(
            Found::Attempt(Kind::ServiceAccount),
            "r",
            object("sa", "gone", "a1"),
        ),
        planted,
    ];
    let plan = sweep(&items, &HashSet::new());
    let touched: Vec<String> = plan
        .actions
        .iter()
        .map(|a| match a {
            SweepAction::Delete(d) => format!("{}/{}", d.namespace, d.name),
            SweepAction::ReleaseJob {
                namespace, name, ..
            } => format!("{namespace}/{name}"),
            SweepAction::ReleaseNamespace { name, .. } => name.clone(),
        })
        .collect();
    assert_eq!(touched, ["ns/r", "ns"], "only the orphan's own objects");
    assert!(!plan.orphans.contains_key("ghost"));
}
