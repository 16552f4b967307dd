//! The deployable manifests, applied as docs/operations.md says, against the local control
//! plane: every object of the overlay without cert-manager is accepted by the API server
//! (server-side dry run: no kubelet runs Pods here), and the cert-manager entry point builds.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use testbed::{User, binaries, kubectl, supervised};

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
    ] {
        assert!(yaml.contains(kind), "{kind} missing");
    }
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

/// The webhook answers only the API server's client certificate by default; the component
/// for clusters whose API server cannot present one switches that off explicitly, and the
/// NetworkPolicy component admits only the API server's addresses to the webhook's port.
#[test]
fn callers_are_authenticated_unless_a_component_says_otherwise() {
    let (_dir, root) = checkout();
    let render = |path: &Path| {
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
    };
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
        "kubectl apply --server-side --dry-run=server -f manifests/components/network-policy/network-policy.yaml",
    );
    assert!(
        out.contains("networkpolicy.networking.k8s.io/providers-webhook serverside-applied"),
        "{out}"
    );
}
