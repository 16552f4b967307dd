//! The foundation on a real kube-apiserver + etcd: CRDs, round-trips, RBAC, kubectl explain.

use std::path::Path;

use kube::{Api, api::PostParams};
use providers_shared::api::{Edge, Recipe, RecipeSpec, Workspace, WorkspaceSpec};
use providers_tests::{ControlPlaneInfo, User, fixtures, kubectl, platform, supervised};
use serde_json::json;

fn plane() -> &'static ControlPlaneInfo {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
    INSTALLED.get_or_init(|| platform::install(plane).expect("CRDs and RBAC install"));
    plane
}

fn recipe(name: &str) -> Recipe {
    fixtures::recipe(
        name,
        RecipeSpec {
            versions: fixtures::versions(&["0.1.0"]),
            values: Some(json!({"replicaCount": 1})),
            values_schema: vec![],
            ..fixtures::recipe_spec()
        },
    )
}

fn edge(name: &str) -> Edge {
    fixtures::edge(name)
}

fn workspace(name: &str, namespace: &str) -> Workspace {
    fixtures::workspace_in(
        namespace,
        name,
        WorkspaceSpec {
            version: Some("0.1.0".into()),
            ..fixtures::with_values(json!({"replicaCount": 2}))
        },
    )
}

fn is_forbidden(result: Result<impl std::fmt::Debug, kube::Error>) -> bool {
    matches!(result, Err(kube::Error::Api(status)) if status.code == 403)
}

#[tokio::test]
async fn crds_are_established_and_objects_round_trip() {
    let plane = plane();
    let out = kubectl::ok(plane.kubeconfig(User::Admin), &["get", "crd", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Established\")].status}{\"\\n\"}{end}"]).unwrap();
    for crd in ["edges", "recipes", "workspaces"] {
        assert!(
            out.contains(&format!("{crd}.providers.platform.dev=True")),
            "{out}"
        );
    }
    let admin = plane.client(User::PlatformAdmin).await.unwrap();
    let recipes: Api<Recipe> = Api::all(admin.clone());
    let created = recipes
        .create(&PostParams::default(), &recipe("round-trip"))
        .await
        .unwrap();
    assert_eq!(recipes.get("round-trip").await.unwrap().spec, created.spec);
    assert_eq!(created.spec, recipe("round-trip").spec);

    let edges: Api<Edge> = Api::all(admin.clone());
    let created = edges
        .create(&PostParams::default(), &edge("round-trip"))
        .await
        .unwrap();
    assert_eq!(
        edges.get("round-trip").await.unwrap().spec,
        edge("round-trip").spec
    );
    assert_eq!(created.spec.kubeconfig_secret_ref.key, "kubeconfig");

    let workspaces: Api<Workspace> = Api::namespaced(admin, "org-a");
    workspaces
        .create(&PostParams::default(), &workspace("round-trip", "org-a"))
        .await
        .unwrap();
    assert_eq!(
        workspaces.get("round-trip").await.unwrap().spec,
        workspace("round-trip", "org-a").spec
    );
}

#[tokio::test]
async fn tenants_write_workspaces_in_their_own_org_only() {
    let plane = plane();
    let alice = plane.client(User::Alice).await.unwrap();
    let mine: Api<Workspace> = Api::namespaced(alice.clone(), "org-a");
    mine.create(&PostParams::default(), &workspace("alice-ws", "org-a"))
        .await
        .expect("alice creates in org-a");
    let theirs: Api<Workspace> = Api::namespaced(alice.clone(), "org-b");
    assert!(is_forbidden(
        theirs
            .create(&PostParams::default(), &workspace("alice-ws", "org-b"))
            .await
    ));
    let bob = plane.client(User::Bob).await.unwrap();
    let theirs: Api<Workspace> = Api::namespaced(bob, "org-a");
    assert!(is_forbidden(theirs.get("alice-ws").await));
}

#[tokio::test]
async fn only_the_platform_writes_recipes_and_edges() {
    let plane = plane();
    for tenant in [User::Alice, User::Bob] {
        let client = plane.client(tenant).await.unwrap();
        let name = format!("by-{}", tenant.name());
        assert!(is_forbidden(
            Api::<Recipe>::all(client.clone())
                .create(&PostParams::default(), &recipe(&name))
                .await
        ));
        assert!(is_forbidden(
            Api::<Edge>::all(client.clone())
                .create(&PostParams::default(), &edge(&name))
                .await
        ));
        // Reading the catalog is allowed.
        Api::<Recipe>::all(client)
            .list(&Default::default())
            .await
            .expect("tenants read recipes");
    }
    let admin = plane.client(User::PlatformAdmin).await.unwrap();
    Api::<Recipe>::all(admin.clone())
        .create(&PostParams::default(), &recipe("by-platform"))
        .await
        .unwrap();
    Api::<Edge>::all(admin)
        .create(&PostParams::default(), &edge("by-platform"))
        .await
        .unwrap();
}

#[test]
fn kubectl_explain_shows_the_field_docs() {
    let plane = plane();
    // The API server publishes a new CRD's OpenAPI a moment after it is Established.
    let mut out = Err(anyhow::anyhow!("not tried"));
    for _ in 0..60 {
        out = kubectl::ok(
            plane.kubeconfig(User::Alice),
            &["explain", "workspaces.spec"],
        );
        if out.is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let out = squash(&out.unwrap());
    assert!(out.contains("The Recipe to install"), "{out}");
    assert!(
        out.contains("Raise this counter to ask for a new attempt"),
        "{out}"
    );
    let out = squash(
        &kubectl::ok(
            plane.kubeconfig(User::Alice),
            &["explain", "workspaces.spec.plan.valuesDigest"],
        )
        .unwrap(),
    );
    assert!(
        out.contains("the Recipe's defaults with the tenant's values merged"),
        "{out}"
    );
}

#[test]
fn printer_columns_show_recipe_edge_and_phase() {
    let plane = plane();
    // Its own Workspace: kubectl prints no header for an empty list, and the other tests
    // that create some may not have run yet.
    platform::apply_yaml(
        plane.kubeconfig(User::Admin),
        "apiVersion: providers.platform.dev/v1alpha1\nkind: Workspace\nmetadata: {name: columns, namespace: org-b}\nspec: {recipe: demo, edge: edge-1}\n",
    )
    .unwrap();
    let out = kubectl::ok(plane.kubeconfig(User::Admin), &["get", "workspaces", "-A"]).unwrap();
    let header = out.lines().next().unwrap_or_default();
    for column in ["RECIPE", "EDGE", "VERSION", "ATTEMPT", "PHASE", "AGE"] {
        assert!(header.contains(column), "{header}");
    }
    let out = kubectl::ok(plane.kubeconfig(User::Admin), &["get", "recipes"]).unwrap();
    assert!(
        out.lines().next().unwrap_or_default().contains("CHART"),
        "{out}"
    );
    let out = kubectl::ok(plane.kubeconfig(User::Admin), &["get", "edges"]).unwrap();
    assert!(
        out.lines().next().unwrap_or_default().contains("READY"),
        "{out}"
    );
    // The resource category names this project only (`providers` is Crossplane's and
    // Cluster API's too): it lists the Workspace made above.
    let out = kubectl::ok(
        plane.kubeconfig(User::Admin),
        &["get", "sealed-providers", "-A", "-o", "name"],
    )
    .unwrap();
    assert!(
        out.contains("workspace.providers.platform.dev/columns"),
        "{out}"
    );
}

/// kubectl wraps descriptions; compare with single spaces.
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
