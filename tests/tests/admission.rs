//! The admission webhook through the real API server: the apiserver calls the real
//! `providers-webhook` at https://127.0.0.1:PORT with a caBundle.

use std::{path::Path, sync::OnceLock};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use providers_shared::{
    api::{ChartRef, Edge, PlanValues, Recipe, RecipeSpec, ValueField, Workspace, WorkspaceSpec},
    installer::names,
    plan_values,
    seal::Keyring,
};
use providers_tests::{
    ControlPlaneInfo, User,
    fixtures::{self, REPOSITORY},
    kubectl, platform, supervised,
    webhook::{KEYS_CONFIGMAP, SYSTEM_NAMESPACE, Webhook},
};
use serde_json::{Value, json};

struct Fixture {
    plane: &'static ControlPlaneInfo,
    _webhook: Webhook,
}

/// One control plane and one webhook for this test binary, with a recipe `demo`, edges
/// `edge-1` (alice may install) and `edge-2` (nobody may).
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
        platform::install(plane).expect("install");
        let webhook = Webhook::start(plane, &[REPOSITORY]).expect("webhook starts");
        // Set up on a runtime of its own: the first caller may be inside a test's runtime.
        let setup = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    tokio::runtime::Runtime::new()
                        .expect("runtime")
                        .block_on(async {
                            let admin = plane.client(User::Admin).await.expect("client");
                            Api::<Recipe>::all(admin.clone())
                                .create(&PostParams::default(), &recipe())
                                .await
                                .expect("recipe");
                            for name in ["edge-1", "edge-2"] {
                                Api::<Edge>::all(admin.clone())
                                    .create(&PostParams::default(), &edge(name))
                                    .await
                                    .expect("edge");
                            }
                            platform::grant_install(&admin, "alice", "edge-1")
                                .await
                                .expect("grant");
                            webhook.register(plane).await.expect("register");
                        })
                })
                .join()
        });
        setup.expect("fixture set up");
        Fixture {
            plane,
            _webhook: webhook,
        }
    })
}

fn recipe() -> Recipe {
    fixtures::recipe(
        "demo",
        RecipeSpec {
            values: Some(json!({"replicaCount": 1, "image": {"tag": "stable"}})),
            values_schema: vec![ValueField {
                description: Some("How many replicas".into()),
                ..fixtures::replica_count()
            }],
            ..fixtures::recipe_spec()
        },
    )
}

fn edge(name: &str) -> Edge {
    fixtures::edge(name)
}

fn workspace(name: &str, edge: &str, values: Value) -> Workspace {
    fixtures::workspace(
        name,
        WorkspaceSpec {
            edge: edge.into(),
            ..fixtures::with_values(values)
        },
    )
}

async fn as_user(user: User) -> Api<Workspace> {
    let fixture = fixture();
    Api::namespaced(fixture.plane.client(user).await.expect("client"), "org-a")
}

async fn admin() -> Client {
    fixture().plane.client(User::Admin).await.expect("client")
}

/// The message of an API error, which carries the webhook's denial.
fn denial(result: Result<Workspace, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => status.message,
        Ok(ws) => panic!("admitted: {:?}", ws.spec),
        Err(other) => panic!("not an API error: {other}"),
    }
}

async fn create(name: &str) -> Workspace {
    as_user(User::Alice)
        .await
        .create(
            &PostParams::default(),
            &workspace(name, "edge-1", json!({"replicaCount": 2})),
        )
        .await
        .expect("created")
}

/// Records a terminal result for the current attempt, as the installer does.
async fn finish(name: &str, result: &str) {
    let api: Api<Workspace> = Api::namespaced(admin().await, "org-a");
    let ws = api.get(name).await.expect("get");
    let plan = &ws.spec.plan.as_ref().expect("sealed").plan;
    let status = json!({"status": {
        "attempt": plan.attempt, "attemptID": plan.attempt_id,
        "jobResult": result, "phase": result,
    }});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status");
}

async fn published_keyring() -> Keyring {
    let config_map = Api::<ConfigMap>::namespaced(admin().await, SYSTEM_NAMESPACE)
        .get(KEYS_CONFIGMAP)
        .await
        .expect("keys");
    let data = config_map.data.unwrap_or_default();
    Keyring::from_pems(data.iter().map(|(k, v)| (k.as_str(), v.as_str()))).expect("keys parse")
}

#[tokio::test]
async fn a_new_workspace_is_sealed_with_the_published_key() {
    let ws = create("sealed").await;
    let sealed = ws.spec.plan.clone().expect("spec.plan is sealed");
    let plan = &sealed.plan;
    assert_eq!(
        (plan.attempt, plan.version.as_str(), plan.release.as_str()),
        (1, "0.2.0", "demo")
    );
    assert_eq!(
        providers_tests::stored_values::values_of(&admin().await, plan)
            .await
            .expect("the values the plan refers to are stored"),
        json!({"replicaCount": 2, "image": {"tag": "stable"}})
    );
    assert_eq!(plan.values, None, "the plan carries their digest only");
    assert_eq!(
        (
            plan.org.as_str(),
            plan.provider.as_str(),
            plan.edge_name.as_str()
        ),
        ("org-a", "demo", "edge-1")
    );
    assert_eq!(
        (plan.cluster.as_str(), plan.owner.username.as_str()),
        ("edge-1-cluster", "alice")
    );
    assert_eq!(
        plan.chart,
        ChartRef {
            repository: REPOSITORY.into(),
            name: "demo".into()
        }
    );
    assert!(!plan.attempt_id.is_empty() && !plan.job.is_empty());
    // The API server assigns the UID after mutating admission: attempt 1 carries none
    // (docs/adr/0003); the installer binds it on first sight.
    assert_eq!(
        plan.workspace.uid, "",
        "uid at mutation: {:?}",
        ws.metadata.uid
    );
    published_keyring()
        .await
        .verify(&sealed)
        .expect("the seal verifies with the published key");
}

#[tokio::test]
async fn an_edge_without_install_rights_is_denied_by_name() {
    let api = as_user(User::Alice).await;
    let message = denial(
        api.create(
            &PostParams::default(),
            &workspace("no-rights", "edge-2", json!({})),
        )
        .await,
    );
    assert!(
        message.contains("\"edge-2\"") && message.contains("install"),
        "{message}"
    );
    // Bob has no install rights anywhere, and none in org-a either.
    let bob: Api<Workspace> =
        Api::namespaced(fixture().plane.client(User::Bob).await.unwrap(), "org-b");
    let message = denial(
        bob.create(
            &PostParams::default(),
            &workspace("bob", "edge-1", json!({})),
        )
        .await,
    );
    assert!(
        message.contains("\"bob\"") && message.contains("edges/edge-1"),
        "{message}"
    );
}

#[tokio::test]
async fn pinned_fields_cannot_change_during_an_active_attempt() {
    let attempt_id = create("pinned").await.spec.plan.unwrap().plan.attempt_id;
    let api = as_user(User::Alice).await;
    let edits = [
        ("values", json!({"spec": {"values": {"replicaCount": 3}}})),
        ("edge", json!({"spec": {"edge": "edge-2"}})),
        ("recipe", json!({"spec": {"recipe": "other"}})),
        ("version", json!({"spec": {"version": "0.1.0"}})),
    ];
    for (field, patch) in edits {
        let message = denial(
            api.patch("pinned", &PatchParams::default(), &Patch::Merge(&patch))
                .await,
        );
        // The CRD's own rule answers first (it runs before validating webhooks); both name
        // the field and the attempt.
        assert!(
            message.contains(&format!("spec.{field}")) && message.contains(&attempt_id),
            "{field}: {message}"
        );
    }
    let before = api.get("pinned").await.unwrap();
    let labelled = api
        .patch(
            "pinned",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"team": "blue"}}})),
        )
        .await
        .expect("labels may change");
    assert_eq!(labelled.spec.plan, before.spec.plan);
}

#[tokio::test]
async fn hand_written_or_copied_plans_are_denied() {
    let victim = create("tamper").await;
    let other = create("tamper-other").await;
    let api = as_user(User::Alice).await;

    let mut changed_chart = serde_json::to_value(victim.spec.plan.as_ref().unwrap()).unwrap();
    changed_chart["chart"]["name"] = json!("evil");
    let mut bad_signature = serde_json::to_value(victim.spec.plan.as_ref().unwrap()).unwrap();
    bad_signature["seal"]["signature"] = json!("AAAA");
    let copied = serde_json::to_value(other.spec.plan.as_ref().unwrap()).unwrap();
    for plan in [changed_chart, bad_signature, copied] {
        let patch = json!({"spec": {"plan": plan}});
        let message = denial(
            api.patch("tamper", &PatchParams::default(), &Patch::Merge(&patch))
                .await,
        );
        assert!(message.contains("spec.plan"), "{message}");
    }
    // After a failed attempt, a forged next attempt (a copied plan renumbered) is refused too.
    finish("tamper", "Failed").await;
    let mut forged = serde_json::to_value(other.spec.plan.as_ref().unwrap()).unwrap();
    forged["attempt"] = json!(2);
    let message = denial(
        api.patch(
            "tamper",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"plan": forged}})),
        )
        .await,
    );
    assert!(
        message.contains("spec.plan") && message.contains("signature"),
        "{message}"
    );
    // A plan carried by a create (a copy here; a backup's in hub_restore) is never what is
    // stored: the webhook seals attempt 1 for this Workspace from its intent (ADR 41).
    let mut with_plan = workspace("tamper-new", "edge-1", json!({}));
    with_plan.spec.plan = victim.spec.plan.clone();
    let stored = api
        .create(&PostParams::default(), &with_plan)
        .await
        .unwrap()
        .spec
        .plan
        .unwrap();
    assert_ne!(Some(&stored), victim.spec.plan.as_ref());
    assert_eq!(stored.plan.workspace.name, "tamper-new");
    assert_eq!(stored.plan.attempt, 1);
}

#[tokio::test]
async fn a_retry_after_failure_runs_the_original_plan() {
    let first = create("retry").await.spec.plan.unwrap().plan;
    finish("retry", "Failed").await;
    // The platform changes the recipe in between: the retry must not pick it up.
    let recipes: Api<Recipe> = Api::all(admin().await);
    let mut changed = recipe();
    changed.metadata.name = Some("demo-retry-check".into());
    let patch = json!({"spec": {"values": {"replicaCount": 1, "image": {"tag": "changed"}}}});
    recipes
        .patch("demo", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let api = as_user(User::Alice).await;
    let retried = api
        .patch(
            "retry",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"retry": 1}})),
        )
        .await
        .expect("retry admitted");
    recipes
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"values": {"image": {"tag": "stable"}}}})),
        )
        .await
        .unwrap();
    let second = retried.spec.plan.unwrap().plan;
    assert_eq!(second.attempt, 2);
    assert_ne!(second.attempt_id, first.attempt_id);
    assert_ne!(second.job, first.job);
    assert_eq!(
        (&second.chart, &second.version, &second.values_digest),
        (&first.chart, &first.version, &first.values_digest)
    );
    let values = providers_tests::stored_values::values_of(&admin().await, &second)
        .await
        .unwrap();
    assert_eq!(values["image"]["tag"], "stable");
}

#[tokio::test]
async fn changed_intent_after_a_terminal_attempt_seals_the_new_intent() {
    let first = create("upgrade").await;
    finish("upgrade", "Succeeded").await;
    let api = as_user(User::Alice).await;
    let patch = json!({"spec": {"version": "0.1.0", "values": {"replicaCount": 4}}});
    let upgraded = api
        .patch("upgrade", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("upgrade admitted");
    let plan = upgraded.spec.plan.unwrap().plan;
    assert_eq!((plan.attempt, plan.version.as_str()), (2, "0.1.0"));
    let values = providers_tests::stored_values::values_of(&admin().await, &plan)
        .await
        .unwrap();
    assert_eq!(values["replicaCount"], 4);
    assert_eq!(
        plan.workspace.uid,
        first.metadata.uid.unwrap(),
        "attempt 2 is bound to the Workspace UID"
    );
}

/// The API server reads back a stored `-0` as the integer 0: a negative zero among the
/// values (the tenant's or a recipe's default) is sealed as 0, so the stored plan still
/// verifies, applying the same manifest again starts nothing, and a retry is admitted.
#[tokio::test]
async fn a_negative_zero_in_the_values_is_sealed_as_it_will_be_stored() {
    let admin = admin().await;
    let mut zero = recipe();
    zero.metadata.name = Some("signed-zero".into());
    zero.spec.values = Some(json!({"offset": -0.0, "replicaCount": 1}));
    zero.spec.values_schema = vec![fixtures::field(
        "ratio",
        providers_shared::api::ValueType::Number,
    )];
    Api::<Recipe>::all(admin.clone())
        .create(&PostParams::default(), &zero)
        .await
        .expect("recipe");
    let api = as_user(User::Alice).await;
    let mut ws = workspace("signed-zero", "edge-1", json!({"ratio": -0.0}));
    ws.spec.recipe = "signed-zero".into();
    assert_eq!(
        serde_json::to_string(&ws.spec.values).unwrap(),
        r#"{"ratio":-0.0}"#,
        "the request carries a negative zero"
    );
    let created = api
        .create(&PostParams::default(), &ws)
        .await
        .expect("created");
    let plan = created.spec.plan.expect("sealed").plan;
    assert_eq!(
        providers_tests::stored_values::values_of(&admin, &plan)
            .await
            .unwrap(),
        json!({"offset": 0, "ratio": 0, "replicaCount": 1})
    );

    // Read back from etcd, as the installer reads it.
    let stored = api.get("signed-zero").await.expect("get");
    let sealed = stored.spec.plan.clone().expect("sealed");
    published_keyring()
        .await
        .verify(&sealed)
        .expect("the stored plan verifies");

    // Once the attempt has failed, a GitOps tool applies the same JSON again: the intent
    // is unchanged (stored, the value reads 0; sent again, -0.0), so nothing starts.
    // (While the attempt is active the CRD's own rule refuses it: CEL compares -0.0 with
    // the stored 0 as different values.)
    finish("signed-zero", "Failed").await;
    let again = api
        .patch(
            "signed-zero",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"values": {"ratio": -0.0}}})),
        )
        .await
        .expect("the same values are admitted");
    assert_eq!(again.spec.plan.expect("sealed").plan.attempt, 1);

    let retried = api
        .patch(
            "signed-zero",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"retry": 1}})),
        )
        .await
        .expect("the retry is admitted");
    let second = retried.spec.plan.expect("sealed").plan;
    assert_eq!((second.attempt, &second.values), (2, &plan.values));
}

#[tokio::test]
async fn values_outside_the_schema_and_unknown_objects_are_denied_by_name() {
    let api = as_user(User::Alice).await;
    let cases = [
        (
            workspace(
                "bad-path",
                "edge-1",
                json!({"image": {"repository": "evil/image"}}),
            ),
            // The first key the recipe does not hold ends the check.
            "spec.values.image: recipe \"demo\" does not let tenants set this path",
        ),
        (
            workspace("bad-type", "edge-1", json!({"replicaCount": "many"})),
            "spec.values.replicaCount",
        ),
        (
            workspace("bad-bound", "edge-1", json!({"replicaCount": 50})),
            "above the maximum 5",
        ),
        (
            workspace("bad-edge", "edge-404", json!({})),
            "edge \"edge-404\" does not exist",
        ),
    ];
    for (ws, text) in cases {
        let message = denial(api.create(&PostParams::default(), &ws).await);
        assert!(message.contains(text), "{text}: {message}");
    }
    let mut unknown = workspace("bad-recipe", "edge-1", json!({}));
    unknown.spec.recipe = "nope".into();
    let message = denial(api.create(&PostParams::default(), &unknown).await);
    assert!(
        message.contains("recipe \"nope\" does not exist"),
        "{message}"
    );
}

/// The mutating webhook sees a tenant's object before the API server checks it against the
/// schema: what does not decode as a Workspace is refused with the path of the field.
#[tokio::test]
async fn an_object_that_does_not_decode_is_refused_with_the_field_path() {
    let client = fixture().plane.client(User::Alice).await.expect("client");
    let resource = kube::api::ApiResource::erase::<Workspace>(&());
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(client, "org-a", &resource);
    let mut object =
        serde_json::to_value(workspace("not-decodable", "edge-1", json!({}))).expect("json");
    object["spec"]["retry"] = json!("twice");
    let object = serde_json::from_value(object).expect("object");
    let message = match api.create(&PostParams::default(), &object).await {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("not refused: {other:?}"),
    };
    assert!(
        message.contains("the object is not a valid Workspace: spec.retry: invalid type"),
        "{message}"
    );
}

const MANIFEST: &str = r#"
apiVersion: providers.platform.dev/v1alpha1
kind: Workspace
metadata:
  name: NAME
  namespace: org-a
spec:
  recipe: demo
  edge: edge-1
  values:
    replicaCount: 2
"#;

fn manifest(name: &str) -> tempfile::NamedTempFile {
    let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(file.path(), MANIFEST.replace("NAME", name)).unwrap();
    file
}

/// `resourceVersion/generation/attempt` of a Workspace.
fn stored(name: &str) -> (String, String) {
    let alice = fixture().plane.kubeconfig(User::Alice);
    let out = kubectl::ok(
        alice,
        &[
            "get",
            "workspace",
            name,
            "-o",
            "jsonpath={.metadata.resourceVersion}/{.metadata.generation}/{.spec.plan.attempt}",
        ],
    )
    .unwrap();
    let (version, rest) = out.split_once('/').unwrap();
    (version.to_owned(), rest.to_owned())
}

/// Applies `name`'s manifest three times with `apply`: no write starts an attempt or
/// changes the spec (generation and attempt stay), and from the second apply on the
/// stored object stays byte for byte (resourceVersion). No installer runs here: the first
/// write after creation stores the status default the API server already showed on every
/// read (ADR 23), which the installer's first status write does otherwise.
fn three_applies_change_nothing(name: &str, apply: &[&str]) {
    let alice = fixture().plane.kubeconfig(User::Alice);
    let file = manifest(name);
    let path = file.path().to_str().unwrap();
    let args: Vec<&str> = apply.iter().copied().chain(["-f", path]).collect();
    kubectl::ok(alice, &args).unwrap();
    let (_, created) = stored(name);
    assert_eq!(created, "1/1", "generation 1, attempt 1");
    kubectl::ok(alice, &args).unwrap();
    let (second_version, second) = stored(name);
    assert_eq!(second, created, "the second apply started nothing");
    let out = kubectl::ok(alice, &args).unwrap();
    let (third_version, third) = stored(name);
    assert_eq!(third, created, "the third apply started nothing");
    assert_eq!(
        third_version, second_version,
        "the third apply stored nothing"
    );
    // A client-side apply that changes nothing says so. A server-side apply prints
    // "serverside-applied" whatever it did, so for it the resourceVersion compared above
    // is the evidence, and its output proves nothing.
    if !apply.contains(&"--server-side") {
        assert!(
            out.contains(&format!(
                "workspace.providers.platform.dev/{name} unchanged"
            )),
            "{out}"
        );
    }
    // The mutating webhook put the installer's finalizer on with the plan, owned by no
    // field manager: the tool's next apply, which never lists it, does not remove it.
    let object: Value = serde_json::from_str(
        &kubectl::ok(
            alice,
            &[
                "get",
                "workspace",
                name,
                "-o",
                "json",
                "--show-managed-fields",
            ],
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        object["metadata"]["finalizers"],
        json!([names::FINALIZER]),
        "{object}"
    );
    let owners: Vec<&Value> = object["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| {
            entry["fieldsV1"]["f:metadata"]
                .get("f:finalizers")
                .is_some()
        })
        .collect();
    assert!(owners.is_empty(), "owned by {owners:?}");
}

#[test]
fn the_same_manifest_applied_twice_is_a_no_op() {
    // Server-side apply, as a GitOps controller does.
    three_applies_change_nothing(
        "gitops-ssa",
        &[
            "apply",
            "--server-side",
            "--field-manager=argocd-controller",
        ],
    );
    // Client-side apply.
    three_applies_change_nothing("gitops-csa", &["apply"]);
}

#[test]
fn a_server_dry_run_shows_the_seal_and_persists_nothing() {
    let alice = fixture().plane.kubeconfig(User::Alice);
    let file = manifest("dry-run");
    let out = kubectl::ok(
        alice,
        &[
            "create",
            "--dry-run=server",
            "-o",
            "json",
            "-f",
            file.path().to_str().unwrap(),
        ],
    )
    .unwrap();
    let object: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(object["spec"]["plan"]["attempt"], 1, "{out}");
    assert!(
        object["spec"]["plan"]["seal"]["signature"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    let get = kubectl::run(alice, &["get", "workspace", "dry-run"]).unwrap();
    assert!(!get.status.success() && String::from_utf8_lossy(&get.stderr).contains("NotFound"));
}

#[tokio::test]
async fn no_new_attempt_starts_while_deletion_is_fenced() {
    create("fenced").await;
    let api: Api<Workspace> = Api::namespaced(admin().await, "org-a");
    // A finalizer keeps the object while it is being deleted, as the installer's does.
    api.patch(
        "fenced",
        &PatchParams::default(),
        &Patch::Merge(&json!({"metadata": {"finalizers": ["test.providers.platform.dev/hold"]}})),
    )
    .await
    .unwrap();
    finish("fenced", "Failed").await;
    api.delete("fenced", &DeleteParams::default())
        .await
        .unwrap();
    let alice = as_user(User::Alice).await;
    let message = denial(
        alice
            .patch(
                "fenced",
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"retry": 1}})),
            )
            .await,
    );
    assert!(message.contains("being deleted"), "{message}");
    let message = denial(
        alice
            .patch(
                "fenced",
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"values": {"replicaCount": 3}}})),
            )
            .await,
    );
    assert!(message.contains("being deleted"), "{message}");
    api.patch(
        "fenced",
        &PatchParams::default(),
        &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

/// Values the webhook stored or checked itself, unchanged since and marked sealed a
/// moment ago, are sealed over again with no write to the hub; values replaced under the
/// same name are checked again, and a create over other content is refused by name. The
/// webhook learns of a change from its watch, a moment after the API server made it: each
/// claim is waited for, retry after retry, and fails when it never comes.
#[tokio::test]
async fn values_the_webhook_checked_are_sealed_again_without_a_write() {
    let values: Api<PlanValues> = Api::namespaced(admin().await, "org-a");
    let plan = create("reseal").await.spec.plan.unwrap().plan;
    let name = plan_values::object_name("reseal", plan.values_digest.as_deref().unwrap());
    let retries = std::sync::atomic::AtomicU32::new(0);
    // Whether one more retry of the failed attempt wrote to the values.
    let retry_writes = || async {
        let before = values.get(&name).await?.metadata.resource_version;
        finish("reseal", "Failed").await;
        let n = retries.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        as_user(User::Alice)
            .await
            .patch(
                "reseal",
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"retry": n}})),
            )
            .await?;
        anyhow::Ok(values.get(&name).await?.metadata.resource_version != before)
    };
    let wait = std::time::Duration::from_secs(30);
    providers_tests::installer::eventually("a retry that writes nothing", wait, || async {
        Ok((!retry_writes().await?).then_some(()))
    })
    .await
    .unwrap();

    // An admin replaces them under the same name, with other content.
    let stored = values.get(&name).await.unwrap();
    values
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let other = plan_values::encode(&json!({"replicaCount": 9})).unwrap();
    let replaced = PlanValues {
        metadata: kube::api::ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        },
        spec: providers_shared::api::PlanValuesSpec {
            digest: stored.spec.digest.clone(),
            ..other
        },
    };
    values
        .create(&PostParams::default(), &replaced)
        .await
        .unwrap();
    // Not checked by the webhook: every retry over them marks them sealed again.
    providers_tests::installer::eventually("a retry that marks replaced values", wait, || async {
        Ok(retry_writes().await?.then_some(()))
    })
    .await
    .unwrap();
    for _ in 0..3 {
        assert!(
            retry_writes().await.unwrap(),
            "values the webhook did not check"
        );
    }
    // A new Workspace of that name, with the values the replaced object no longer holds.
    let workspaces: Api<Workspace> = Api::namespaced(admin().await, "org-a");
    workspaces
        .delete("reseal", &DeleteParams::default())
        .await
        .unwrap();
    let refused = as_user(User::Alice)
        .await
        .create(
            &PostParams::default(),
            &workspace("reseal", "edge-1", json!({"replicaCount": 2})),
        )
        .await;
    let message = denial(refused);
    assert!(
        message.contains(&name) && message.contains("already exists and its values"),
        "{message}"
    );
}
