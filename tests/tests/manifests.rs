//! The deployable manifests, applied as docs/operations.md says, against the local control
//! plane: every object of the overlay without cert-manager is accepted by the API server
//! (server-side dry run: no kubelet runs Pods here), and the cert-manager entry point builds.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use providers_tests::{User, binaries, kubectl, supervised};
use serde_json::Value;

/// A copy of manifests/ in a temporary folder, since generate.sh writes the caBundle into
/// the overlay, as it does in an operator's checkout.
fn checkout() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = binaries::workspace_root().unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(root.join("manifests"))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let path = dir.path().to_path_buf();
    (dir, path)
}

fn sh(cwd: &Path, kubeconfig: &Path, script: &str) -> String {
    let bin_dir = binaries::cargo_bin("providers-webhook")
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(cwd)
        .env("KUBECONFIG", kubeconfig)
        .env("PATH", path)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{script}\n{text}");
    text
}

#[test]
fn the_cert_manager_entry_point_builds() {
    let root = binaries::workspace_root().unwrap();
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(root.join("manifests"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8_lossy(&out.stdout);
    for kind in [
        "kind: CustomResourceDefinition",
        "kind: Certificate",
        "kind: Issuer",
        "kind: Deployment",
        "kind: PodDisruptionBudget",
        "kind: MutatingWebhookConfiguration",
        "kind: ValidatingWebhookConfiguration",
        "cert-manager.io/inject-ca-from: providers-system/providers-webhook",
        "kind: Service\nmetadata:\n  labels:\n    app.kubernetes.io/name: providers-controller",
        "pod-security.kubernetes.io/enforce: restricted",
    ] {
        assert!(yaml.contains(kind), "{kind} missing");
    }
    assert!(
        !yaml.contains("name: providers-namespace"),
        "the build-time namespace input is not applied"
    );
}

/// cert-manager issues the serving certificate from a CA of the platform's own, so a
/// renewal leaves the injected caBundle as it is: self-signed Issuer -> CA Certificate ->
/// CA Issuer -> serving Certificate, and the CA's key is kept on renewal.
#[test]
fn cert_manager_issues_from_a_stable_ca() {
    let root = binaries::workspace_root().unwrap();
    let yaml = render(&root.join("manifests"));
    let docs: Vec<serde_json::Value> = serde_norway::Deserializer::from_str(&yaml)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .collect();
    let find = |kind: &str, name: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{kind}/{name} missing"))
            .clone()
    };
    let selfsigned = find("Issuer", "providers-selfsigned");
    assert!(selfsigned["spec"]["selfSigned"].is_object());
    let ca = find("Certificate", "providers-ca");
    assert_eq!(ca["spec"]["isCA"], true);
    assert_eq!(ca["spec"]["issuerRef"]["name"], "providers-selfsigned");
    assert_eq!(ca["spec"]["privateKey"]["rotationPolicy"], "Never");
    let ca_issuer = find("Issuer", "providers-ca");
    assert_eq!(
        ca_issuer["spec"]["ca"]["secretName"],
        ca["spec"]["secretName"]
    );
    let serving = find("Certificate", "providers-webhook");
    assert_eq!(serving["spec"]["issuerRef"]["name"], "providers-ca");
    assert!(serving["spec"]["isCA"].is_null());
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        let config = find(kind, "providers-webhook");
        assert_eq!(
            config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            "providers-system/providers-webhook"
        );
    }
}

fn render(path: &Path) -> String {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// docs/operations.md, "In another namespace": one line of the overlay moves the platform,
/// and everything that names the namespace follows; the API server accepts the result
/// (server-side dry run, cert-manager's kinds standing in with open schemas).
#[test]
fn one_line_moves_the_platform_to_another_namespace() {
    let (_dir, root) = checkout();
    let input = root.join("manifests/overlays/namespace/platform-namespace.yaml");
    let text = std::fs::read_to_string(&input).unwrap();
    let changed: Vec<&str> = text
        .lines()
        .filter(|line| line.trim() == "name: platform-providers")
        .collect();
    assert_eq!(changed.len(), 1, "one line names the namespace: {text}");
    std::fs::write(
        &input,
        text.replace("name: platform-providers", "name: team-platform"),
    )
    .unwrap();
    let yaml = render(&root.join("manifests/overlays/namespace"));
    assert!(
        !yaml.contains("providers-system"),
        "nothing names the default namespace any more:\n{yaml}"
    );
    for expected in [
        "kind: Namespace\nmetadata:\n  labels:\n    app.kubernetes.io/part-of: providers\n    pod-security.kubernetes.io/enforce: restricted\n    pod-security.kubernetes.io/enforce-version: latest\n  name: team-platform",
        "name: providers-edges",
        "namespace: team-platform",
        "cert-manager.io/inject-ca-from: team-platform/providers-webhook",
        "- providers-webhook.team-platform.svc\n",
        "- providers-webhook.team-platform.svc.cluster.local",
        "'system:serviceaccount:team-platform:providers-controller'",
        "fieldPath: metadata.namespace",
    ] {
        assert!(yaml.contains(expected), "{expected} missing:\n{yaml}");
    }
    let docs: Vec<serde_json::Value> = serde_norway::Deserializer::from_str(&yaml)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .collect();
    for doc in &docs {
        for subject in doc["subjects"].as_array().into_iter().flatten() {
            if subject["kind"] == "ServiceAccount" {
                assert_eq!(subject["namespace"], "team-platform", "{doc}");
            }
        }
        for webhook in doc["webhooks"].as_array().into_iter().flatten() {
            assert_eq!(
                webhook["clientConfig"]["service"]["namespace"],
                "team-platform"
            );
        }
        // The edges' Secrets stay apart.
        if doc["metadata"]["name"] == "providers-controller-edge-credentials" {
            assert_eq!(doc["metadata"]["namespace"], "providers-edges", "{doc}");
        }
    }

    // Components added as docs/operations.md says (before follow-namespace) move too, and
    // a binding of the platform team's own in the same build is left as it is.
    let overlay = root.join("manifests/overlays/namespace");
    std::fs::write(
        overlay.join("catalog-readers.yaml"),
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: catalog-readers\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: view\nsubjects:\n  - kind: Group\n    name: developers\n    apiGroup: rbac.authorization.k8s.io\n",
    )
    .unwrap();
    let kustomization = std::fs::read_to_string(overlay.join("kustomization.yaml")).unwrap();
    std::fs::write(
        overlay.join("kustomization.yaml"),
        kustomization
            .replace(
                "  - ../../cert-manager\n",
                "  - ../../cert-manager\n  - catalog-readers.yaml\n",
            )
            .replace(
                "components:\n",
                "components:\n  - ../../components/network-policy\n  - ../../components/unauthenticated-callers\n",
            ),
    )
    .unwrap();
    let with_components = render(&overlay);
    assert!(
        !with_components.contains("providers-system"),
        "{with_components}"
    );
    let docs: Vec<serde_json::Value> = serde_norway::Deserializer::from_str(&with_components)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .collect();
    let policy = docs
        .iter()
        .find(|d| d["kind"] == "NetworkPolicy")
        .expect("the NetworkPolicy");
    assert_eq!(policy["metadata"]["namespace"], "team-platform");
    let readers = docs
        .iter()
        .find(|d| d["metadata"]["name"] == "catalog-readers")
        .expect("the platform team's binding");
    assert_eq!(readers["subjects"][0]["name"], "developers");
    std::fs::write(overlay.join("kustomization.yaml"), kustomization).unwrap();

    let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
    let admin = plane.kubeconfig(User::Admin);
    let fixtures = binaries::workspace_root()
        .unwrap()
        .join("tests/fixtures/cert-manager/crds.yaml");
    sh(
        &root,
        admin,
        &format!(
            "kubectl apply --server-side -f {}\nkubectl wait --for condition=Established crd/certificates.cert-manager.io crd/issuers.cert-manager.io\nkubectl create namespace team-platform\nkubectl create namespace providers-edges --dry-run=client -o yaml | kubectl apply --server-side -f -",
            fixtures.display()
        ),
    );
    let out = sh(
        &root,
        admin,
        "kubectl apply --server-side --dry-run=server -k manifests/overlays/namespace",
    );
    for object in [
        "namespace/team-platform serverside-applied (server dry run)",
        "deployment.apps/providers-webhook serverside-applied (server dry run)",
        "deployment.apps/providers-controller serverside-applied (server dry run)",
        "service/providers-controller-metrics serverside-applied (server dry run)",
        "certificate.cert-manager.io/providers-webhook serverside-applied (server dry run)",
        "issuer.cert-manager.io/providers-ca serverside-applied (server dry run)",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/providers-webhook serverside-applied (server dry run)",
        "validatingadmissionpolicy.admissionregistration.k8s.io/providers-installer-confinement serverside-applied (server dry run)",
    ] {
        assert!(out.contains(object), "{object} not in:\n{out}");
    }
    assert!(!out.contains("Error"), "{out}");
}

#[test]
fn the_overlay_without_cert_manager_is_accepted_as_documented() {
    let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
    let admin = plane.kubeconfig(User::Admin);
    let (_dir, root) = checkout();
    // docs/operations.md, "Without cert-manager".
    sh(
        &root,
        admin,
        "manifests/overlays/self-signed/generate.sh certs",
    );
    sh(
        &root,
        admin,
        "kubectl apply --server-side -k manifests/namespace",
    );
    sh(
        &root,
        admin,
        "kubectl apply --server-side -f certs/webhook-tls-secret.yaml",
    );
    sh(
        &root,
        admin,
        "kubectl apply --server-side -f certs/webhook-callers-configmap.yaml",
    );
    // What generate.sh hands the API server names the client certificate it made.
    let config = std::fs::read_to_string(root.join("certs/admission-configuration.yaml")).unwrap();
    assert!(config.contains("kind: AdmissionConfiguration"), "{config}");
    let kubeconfig =
        std::fs::read_to_string(root.join("certs/webhook-admission.kubeconfig")).unwrap();
    assert!(
        kubeconfig.contains("providers-webhook.providers-system.svc")
            && kubeconfig.contains("apiserver-webhook-client.crt"),
        "{kubeconfig}"
    );
    let out = sh(
        &root,
        admin,
        "kubectl apply --server-side --dry-run=server -k manifests/overlays/self-signed",
    );
    for object in [
        "customresourcedefinition.apiextensions.k8s.io/workspaces.providers.platform.dev serverside-applied (server dry run)",
        "deployment.apps/providers-webhook serverside-applied (server dry run)",
        "deployment.apps/providers-controller serverside-applied (server dry run)",
        "clusterrole.rbac.authorization.k8s.io/providers-controller serverside-applied (server dry run)",
        "poddisruptionbudget.policy/providers-webhook serverside-applied (server dry run)",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/providers-webhook serverside-applied (server dry run)",
        "validatingwebhookconfiguration.admissionregistration.k8s.io/providers-webhook serverside-applied (server dry run)",
        "validatingadmissionpolicy.admissionregistration.k8s.io/providers-finalizer-guard serverside-applied (server dry run)",
        "validatingadmissionpolicy.admissionregistration.k8s.io/providers-values-bounds serverside-applied (server dry run)",
    ] {
        assert!(out.contains(object), "{object} not in:\n{out}");
    }
    assert!(!out.contains("Error"), "{out}");
    // docs/operations.md, the sealing key.
    sh(
        &root,
        admin,
        r#"providers-webhook keygen --private-key sealing.pem --public-key sealing.pub > key-id
kubectl -n providers-system create secret generic providers-sealing-key --from-file=sealing.pem
kubectl -n providers-system create configmap providers-sealing-keys --from-file="$(cat key-id).pem=sealing.pub"
rm sealing.pem"#,
    );
    let key_id = std::fs::read_to_string(root.join("key-id")).unwrap();
    let keys = kubectl::ok(
        admin,
        &[
            "-n",
            "providers-system",
            "get",
            "configmap",
            "providers-sealing-keys",
            "-o",
            "jsonpath={.data}",
        ],
    )
    .unwrap();
    assert!(keys.contains(&format!("{}.pem", key_id.trim())), "{keys}");
    let secret = kubectl::ok(
        admin,
        &[
            "-n",
            "providers-system",
            "get",
            "secret",
            "providers-webhook-tls",
            "-o",
            "jsonpath={.type}",
        ],
    )
    .unwrap();
    assert_eq!(secret, "kubernetes.io/tls");
}

/// Renders `kustomization`, written into `folder` beside manifests/, and returns its
/// installer Deployment and the installer's PodDisruptionBudget (if any).
fn installer_of(root: &Path, folder: &str, kustomization: &str) -> (Value, Option<Value>) {
    let overlay = root.join(folder);
    std::fs::create_dir_all(&overlay).unwrap();
    std::fs::write(overlay.join("kustomization.yaml"), kustomization).unwrap();
    let rendered = render(&overlay);
    let docs: Vec<Value> = serde_norway::Deserializer::from_str(&rendered)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .collect();
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "providers-controller")
        .expect("the installer's Deployment")
        .clone();
    let budget = docs
        .iter()
        .find(|d| {
            d["kind"] == "PodDisruptionBudget" && d["metadata"]["name"] == "providers-controller"
        })
        .cloned();
    (deployment, budget)
}

/// The installer's arguments in a rendered Deployment.
fn installer_args(deployment: &Value) -> Vec<String> {
    deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("the installer's args")
        .iter()
        .map(|arg| arg.as_str().expect("an argument is a string").to_owned())
        .collect()
}

/// What manifests/ ships (ADR 40): three installer replicas, every one working a share of
/// the edges (the installer's only mode), spread over nodes where there are several but
/// never kept off one (ScheduleAnyway, no required anti-affinity), and a
/// PodDisruptionBudget that lets a drain stop one at a time and never waits on a replica
/// that is not Ready. One replica is valid (it holds every edge); the API server accepts
/// both, no argument names the removed mode flag, and the shipped alert reads the metric
/// the installer exports for edges without an owner.
#[test]
fn the_installer_runs_three_sharing_replicas_with_a_disruption_budget() {
    let (_dir, root) = checkout();
    let (deployment, budget) = installer_of(
        &root,
        "default",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../manifests\n",
    );
    assert_eq!(deployment["spec"]["replicas"], 3, "{deployment}");
    assert_eq!(
        installer_args(&deployment),
        [
            "controller",
            "--metrics-listen=0.0.0.0:8080",
            "--log-format=json"
        ],
        "the removed --shard-edges is passed no more: a binary without it would refuse it"
    );
    assert!(
        !root.join("manifests/components/leader-standby").exists(),
        "the leader-standby component is gone with its mode"
    );
    let pod = &deployment["spec"]["template"]["spec"];
    assert!(
        pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            .is_null(),
        "{pod}"
    );
    let spread = pod["topologySpreadConstraints"]
        .as_array()
        .expect("the replicas are spread over nodes");
    assert_eq!(spread.len(), 1, "{pod}");
    assert_eq!(spread[0]["topologyKey"], "kubernetes.io/hostname");
    assert_eq!(spread[0]["whenUnsatisfiable"], "ScheduleAnyway");
    assert_eq!(
        spread[0]["labelSelector"]["matchLabels"],
        deployment["spec"]["selector"]["matchLabels"]
    );
    let budget = budget.expect("the installer's PodDisruptionBudget");
    assert_eq!(budget["spec"]["maxUnavailable"], 1, "{budget}");
    assert_eq!(budget["spec"]["unhealthyPodEvictionPolicy"], "AlwaysAllow");
    assert!(budget["spec"]["minAvailable"].is_null(), "{budget}");
    assert_eq!(
        budget["spec"]["selector"], deployment["spec"]["selector"],
        "the budget counts the installer's Pods"
    );

    // One replica, with kustomize's own field: it holds every edge, and the budget lets a
    // drain evict it.
    let (one, one_budget) = installer_of(
        &root,
        "one",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../manifests/controller\nreplicas:\n  - name: providers-controller\n    count: 1\n",
    );
    assert_eq!(one["spec"]["replicas"], 1, "{one}");
    assert_eq!(installer_args(&one), installer_args(&deployment));
    assert_eq!(one_budget.expect("the budget")["spec"]["maxUnavailable"], 1);

    let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
    let admin = plane.kubeconfig(User::Admin);
    sh(
        &root,
        admin,
        "kubectl apply --server-side -k manifests/namespace",
    );
    let out = sh(
        &root,
        admin,
        "kubectl apply --server-side --dry-run=server -k one",
    );
    for object in [
        "deployment.apps/providers-controller serverside-applied (server dry run)",
        "poddisruptionbudget.policy/providers-controller serverside-applied (server dry run)",
    ] {
        assert!(out.contains(object), "one: {object} not in:\n{out}");
    }
    // docs/operations.md, "Upgrading from the leader-standby mode": the old replicas are
    // stopped first, then the new version applied.
    sh(
        &root,
        admin,
        "kubectl apply --server-side -k one
kubectl -n providers-system scale deployment/providers-controller --replicas=0
kubectl -n providers-system wait --for=delete pod -l app.kubernetes.io/name=providers-controller --timeout=120s
kubectl apply --server-side -k manifests/controller",
    );
    let applied = kubectl::ok(
        admin,
        &[
            "-n",
            "providers-system",
            "get",
            "deployment",
            "providers-controller",
            "-o",
            "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].args}",
        ],
    )
    .unwrap();
    assert_eq!(
        applied,
        r#"3 ["controller","--metrics-listen=0.0.0.0:8080","--log-format=json"]"#
    );
    let rule =
        std::fs::read_to_string(root.join("manifests/monitoring/prometheusrule.yaml")).unwrap();
    // The name installer_sharding scrapes from running replicas.
    assert!(rule.contains("max(providers_installer_edges_without_owner) > 0"));
}

/// The webhook answers only the API server's client certificate by default; the component
/// for clusters whose API server cannot present one switches that off explicitly, and the
/// NetworkPolicy component admits only the API server's addresses to the webhook's port.
#[test]
fn callers_are_authenticated_unless_a_component_says_otherwise() {
    let (_dir, root) = checkout();
    let base = render(&root.join("manifests/webhook"));
    assert!(
        base.contains("--client-ca=/etc/providers/callers/ca.crt"),
        "{base}"
    );
    assert!(base.contains("name: providers-webhook-callers"), "{base}");
    assert!(!base.contains("--allow-unauthenticated-callers"));
    let overlay = root.join("managed");
    std::fs::create_dir_all(&overlay).unwrap();
    std::fs::write(
        overlay.join("kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../manifests/webhook\ncomponents:\n  - ../manifests/components/unauthenticated-callers\n  - ../manifests/components/network-policy\n",
    )
    .unwrap();
    let managed = render(&overlay);
    assert!(
        managed.contains("--allow-unauthenticated-callers"),
        "{managed}"
    );
    assert!(!managed.contains("--client-ca"), "{managed}");
    assert!(!managed.contains("providers-webhook-callers"), "{managed}");
    assert!(managed.contains("kind: NetworkPolicy") && managed.contains("port: 8443"));
    let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
    let admin = plane.kubeconfig(User::Admin);
    sh(
        &root,
        admin,
        "kubectl apply --server-side -k manifests/namespace",
    );
    let out = sh(
        &root,
        admin,
        "kubectl apply --server-side --dry-run=server -o json -f manifests/components/network-policy/network-policy.yaml",
    );
    // What the API server would store: the webhook's Pods, reachable on 8443 only.
    let policy: serde_json::Value = serde_json::from_str(&out).expect("the applied policy");
    assert_eq!(policy["kind"], "NetworkPolicy", "{out}");
    assert_eq!(policy["metadata"]["namespace"], "providers-system", "{out}");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"], "providers-webhook",
        "{out}"
    );
    assert_eq!(
        policy["spec"]["policyTypes"],
        serde_json::json!(["Ingress"]),
        "{out}"
    );
    assert_eq!(
        policy["spec"]["ingress"][0]["ports"],
        serde_json::json!([{"protocol": "TCP", "port": 8443}]),
        "{out}"
    );
}

/// The header of install.yaml; the rest is `kubectl kustomize manifests/` as it renders now.
const INSTALL_HEADER: &str = "# The platform in one file, with the webhook's serving certificate from cert-manager:\n#   kubectl apply --server-side -f install.yaml\n# Rendered from manifests/ (do not edit; regenerate with\n#   { head -n 5 install.yaml; kubectl kustomize manifests; } > install.yaml.new && mv install.yaml.new install.yaml\n# ). The sealing key comes first: docs/operations.md, \"Install\".\n";

/// install.yaml is the current render of manifests/, and the API server accepts every
/// object in it (server-side dry run; cert-manager's kinds standing in with open schemas).
#[test]
fn install_yaml_is_the_current_render_and_applies() {
    let root = binaries::workspace_root().unwrap();
    let checked_in = std::fs::read_to_string(root.join("install.yaml")).unwrap();
    let body = checked_in
        .strip_prefix(INSTALL_HEADER)
        .expect("install.yaml starts with its header");
    assert!(
        body == render(&root.join("manifests")),
        "install.yaml differs from `kubectl kustomize manifests`: regenerate it as its header says"
    );
    let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
    let admin = plane.kubeconfig(User::Admin);
    let fixtures = root.join("tests/fixtures/cert-manager/crds.yaml");
    sh(
        &root,
        admin,
        &format!(
            "kubectl apply --server-side -f {}\nkubectl wait --for condition=Established crd/certificates.cert-manager.io crd/issuers.cert-manager.io\nkubectl apply --server-side -k manifests/namespace",
            fixtures.display()
        ),
    );
    let out = sh(
        &root,
        admin,
        "kubectl apply --server-side --dry-run=server -f install.yaml",
    );
    for object in [
        "customresourcedefinition.apiextensions.k8s.io/workspaces.providers.platform.dev serverside-applied (server dry run)",
        "deployment.apps/providers-webhook serverside-applied (server dry run)",
        "deployment.apps/providers-controller serverside-applied (server dry run)",
        "certificate.cert-manager.io/providers-ca serverside-applied (server dry run)",
        "issuer.cert-manager.io/providers-ca serverside-applied (server dry run)",
        "validatingwebhookconfiguration.admissionregistration.k8s.io/providers-webhook serverside-applied (server dry run)",
    ] {
        assert!(out.contains(object), "{object} not in:\n{out}");
    }
    assert!(!out.contains("Error"), "{out}");
}
