//! The Helm chart of the platform (charts/providers): it lints with the values of a real
//! install and refuses to guess who may call the webhook; it follows the release namespace
//! everywhere; it renders what the kustomize build (manifests/) renders, field for field
//! where the two must never drift; and the real API server takes it: helm's server-side dry
//! run in both certificate modes, then an install whose Pods meet the restricted Pod
//! Security Standard and an upgrade that rotates no certificate.

use std::{
    collections::BTreeMap,
    ffi::OsStr,
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::Arc,
};

use base64::Engine as _;
use providers_tests::{User, binaries, kubectl, pki::Authority, supervised};
use rustls::{
    client::{WebPkiServerVerifier, danger::ServerCertVerifier},
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime, pem::PemObject},
};
use serde_json::Value;

/// The chart, relative to the workspace root (every helm command runs there).
const CHART: &str = "charts/providers";

/// The real helm (v4, built with the control plane) with its caches and configuration in
/// a folder of its own, run in the workspace root.
struct Helm {
    bin: PathBuf,
    root: PathBuf,
    home: tempfile::TempDir,
}

impl Helm {
    fn new() -> Self {
        Self {
            bin: binaries::path("helm").unwrap(),
            root: binaries::workspace_root().unwrap(),
            home: tempfile::Builder::new()
                .prefix("providers-chart-helm-")
                .tempdir()
                .unwrap(),
        }
    }

    fn run<I, S>(&self, args: I) -> (Output, String)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let home = self.home.path();
        let out = Command::new(&self.bin)
            .args(&args)
            .current_dir(&self.root)
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env_remove("KUBECONFIG")
            .env_remove("HELM_NAMESPACE")
            .output()
            .unwrap();
        let shown = format!(
            "helm {}\n--- exit: {}\n--- stderr:\n{}\n--- stdout:\n{}",
            args.iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout),
        );
        (out, shown)
    }

    /// Runs helm, which must exit 0; returns its standard output.
    fn ok<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let (out, shown) = self.run(args);
        assert!(out.status.success(), "helm failed:\n{shown}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs helm, which must fail; returns its standard error and output together.
    fn fails<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let (out, shown) = self.run(args);
        assert!(
            !out.status.success(),
            "helm succeeded but should not:\n{shown}"
        );
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        )
    }

    /// `helm template` of the chart (CRDs included) in `namespace` with `values`.
    fn template(&self, namespace: &str, values: &[&str]) -> String {
        let mut args = vec![
            "template",
            "providers",
            CHART,
            "--namespace",
            namespace,
            "--include-crds",
        ];
        args.extend_from_slice(values);
        self.ok(args)
    }

    /// A file in helm's own folder (for --set-file).
    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.home.path().join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }
}

/// Every YAML document of a stream, as JSON values (empty documents dropped).
fn documents(yaml: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(yaml)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|doc: &Value| !doc.is_null())
        .collect()
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{kind}/{name} is not rendered"))
}

fn has(docs: &[Value], kind: &str, name: &str) -> bool {
    docs.iter()
        .any(|d| d["kind"] == kind && d["metadata"]["name"] == name)
}

/// Objects by kind, namespace and name.
fn by_identity(docs: &[Value]) -> BTreeMap<(String, String, String), Value> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    docs.iter()
        .map(|d| {
            (
                (
                    text(&d["kind"]),
                    text(&d["metadata"]["namespace"]),
                    text(&d["metadata"]["name"]),
                ),
                d.clone(),
            )
        })
        .collect()
}

/// `kubectl kustomize` of a folder.
fn kustomize(path: &Path) -> String {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value with every number that is a whole number written as an integer (kustomize
/// re-emits a CRD's `minimum: 0.0` as `0`; to the API server both are the JSON number 0),
/// and, if `squeeze`, every string with its runs of whitespace made one space: kustomize
/// re-emits a folded CEL expression whose continuation lines are indented further with an
/// extra blank line (`>-` becomes `|-`); whitespace means nothing to CEL or to a message, a
/// changed word does.
fn normalized(value: &Value, squeeze: bool) -> Value {
    match value {
        Value::String(s) if squeeze => {
            Value::String(s.split_whitespace().collect::<Vec<_>>().join(" "))
        }
        Value::Number(n) => match n.as_f64() {
            // Up to 2^53 - 1 (spec.retry's maximum) every integer is exact as a float.
            Some(f) if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_991.0 => {
                Value::from(f as i64)
            }
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| normalized(v, squeeze)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), normalized(v, squeeze)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn container(deployment: &Value) -> &Value {
    &deployment["spec"]["template"]["spec"]["containers"][0]
}

fn args(deployment: &Value) -> Vec<String> {
    container(deployment)["args"]
        .as_array()
        .unwrap_or_else(|| panic!("no args: {deployment}"))
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

fn b64(text: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(
            text.as_str()
                .unwrap_or_else(|| panic!("not a string: {text}")),
        )
        .unwrap()
}

/// Whether `cert_pem` is signed by `ca_pem` and valid for `host` now, as the API server's
/// TLS client would check it (webpki, the verifier rustls uses).
fn verify_serving(ca_pem: &[u8], cert_pem: &[u8], host: &str) -> Result<(), rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem).expect("the CA is a PEM certificate"))
        .unwrap();
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .unwrap();
    let leaf = CertificateDer::from_pem_slice(cert_pem).expect("a PEM certificate");
    verifier
        .verify_server_cert(
            &leaf,
            &[],
            &ServerName::try_from(host.to_owned()).unwrap(),
            &[],
            UnixTime::now(),
        )
        .map(|_| ())
}

// --- 1. lint ---------------------------------------------------------------------------

/// `helm lint --strict` passes with what a real install sets, and without any answer to
/// "who may call the webhook" the chart refuses, naming the values to set; contradictory
/// or unsafe values fail with the chart's own messages.
#[test]
fn lint_passes_for_a_real_install_and_the_chart_refuses_to_guess_who_calls_the_webhook() {
    let helm = Helm::new();
    // A managed cluster: no client certificate from the API server, the network closed.
    helm.ok([
        "lint",
        "--strict",
        CHART,
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "networkPolicy.enabled=true",
        "--set",
        "networkPolicy.apiServerCIDRs={10.0.0.0/28}",
    ]);
    // An API server with a webhook client certificate; no cert-manager; Prometheus.
    let callers = helm.write(
        "callers-ca.crt",
        &Authority::generate("callers").unwrap().cert_pem,
    );
    helm.ok([
        "lint".to_owned(),
        "--strict".to_owned(),
        CHART.to_owned(),
        "--set-file".to_owned(),
        format!("webhook.callers.caBundle={}", callers.display()),
        "--set".to_owned(),
        "certificates.mode=self-signed".to_owned(),
        "--set".to_owned(),
        "monitoring.serviceMonitor.enabled=true".to_owned(),
    ]);

    // Nothing said: the schema refuses and names the three ways out (helm lint does not
    // stop at a template's `fail`, the schema is what it checks).
    let out = helm.fails(["lint", "--strict", CHART]);
    for value in [
        "/webhook/callers/caBundle",
        "/webhook/callers/existingConfigMap",
        "/webhook/allowUnauthenticatedCallers",
    ] {
        assert!(out.contains(value), "{value} not named:\n{out}");
    }
    let out = helm.fails(["install", "providers", CHART, "--dry-run=client"]);
    assert!(
        out.contains("/webhook/allowUnauthenticatedCallers"),
        "{out}"
    );
    // Past the schema, the chart's own message says which value and why.
    let out = helm.fails(["template", "providers", CHART, "--skip-schema-validation"]);
    for expected in [
        "no caller authentication chosen for the webhook",
        "it answers only the API server",
        "Who may call the webhook",
        "webhook.callers.caBundle",
        "webhook.callers.existingConfigMap",
        "webhook.allowUnauthenticatedCallers=true",
    ] {
        assert!(out.contains(expected), "{expected:?} not in:\n{out}");
    }

    // Both a CA and no authentication: the webhook cannot do both.
    let out = helm.fails([
        "template",
        "providers",
        CHART,
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "webhook.callers.existingConfigMap=callers",
    ]);
    assert!(out.contains("choose one"), "{out}");
    // A CA but no subject to allow.
    let out = helm.fails([
        "template",
        "providers",
        CHART,
        "--set",
        "webhook.callers.existingConfigMap=callers",
        "--set",
        "webhook.allowedClients=null",
    ]);
    assert!(out.contains("webhook.allowedClients is empty"), "{out}");
    // The edges' credentials in the namespace of the sealing key.
    let out = helm.fails([
        "template",
        "providers",
        CHART,
        "--namespace",
        "providers-edges",
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
    ]);
    assert!(
        out.contains("edgeCredentials.namespace is the release namespace"),
        "{out}"
    );
    // The cluster's own namespaces hold its credentials: neither the release nor the
    // edges' Secrets go there.
    let out = helm.fails([
        "template",
        "providers",
        CHART,
        "--namespace",
        "kube-system",
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
    ]);
    assert!(
        out.contains("the release namespace is kube-system"),
        "{out}"
    );
    let out = helm.fails([
        "template",
        "providers",
        CHART,
        "--namespace",
        "providers-system",
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "edgeCredentials.namespace=default",
    ]);
    assert!(
        out.contains("edgeCredentials.namespace is default"),
        "{out}"
    );
    // A value is a value: a string with a document separator stays one string.
    let out = helm.ok([
        "template",
        "providers",
        CHART,
        "--namespace",
        "providers-system",
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "controller.priorityClassName=x\n---\nkind: RoleBinding",
        "--set",
        "controller.helmImage=helm\n  hostNetwork: true",
    ]);
    assert!(
        out.contains(r#"priorityClassName: "x\n---\nkind: RoleBinding""#)
            && out.contains(r#"- "--helm-image=helm\n  hostNetwork: true""#)
            && !out.contains("\n  hostNetwork: true\n"),
        "{out}"
    );
    // A NetworkPolicy that admits no one.
    let out = helm.fails([
        "template",
        "providers",
        CHART,
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "networkPolicy.enabled=true",
    ]);
    assert!(
        out.contains("networkPolicy.apiServerCIDRs is empty"),
        "{out}"
    );
    // The schema catches a misspelt value and an unknown certificate mode.
    let out = helm.fails([
        "lint",
        "--strict",
        CHART,
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "webhook.replica=3",
    ]);
    assert!(out.contains("replica"), "{out}");
    let out = helm.fails([
        "lint",
        "--strict",
        CHART,
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "certificates.mode=vault",
    ]);
    assert!(out.contains("/certificates/mode"), "{out}");
}

// --- 2. the release namespace -------------------------------------------------------------

/// In another namespace than providers-system, in both certificate modes, everything that
/// names the namespace follows the release's, and only the edges' credentials stay apart.
#[test]
fn everything_follows_the_release_namespace() {
    let helm = Helm::new();
    for mode in ["cert-manager", "self-signed"] {
        let yaml = helm.template(
            "team-platform",
            &[
                "--set",
                &format!("certificates.mode={mode}"),
                "--set",
                "webhook.allowUnauthenticatedCallers=true",
                "--set",
                "monitoring.serviceMonitor.enabled=true",
                "--set",
                "networkPolicy.enabled=true",
                "--set",
                "networkPolicy.apiServerCIDRs={10.0.0.0/28}",
            ],
        );
        assert!(
            !yaml.contains("providers-system"),
            "{mode}: the default namespace is named:\n{yaml}"
        );
        let docs = documents(&yaml);
        assert!(docs.len() > 30, "{mode}: {} objects", docs.len());
        const NAMESPACED: [&str; 12] = [
            "ServiceAccount",
            "ConfigMap",
            "Secret",
            "Service",
            "Deployment",
            "PodDisruptionBudget",
            "Role",
            "RoleBinding",
            "Issuer",
            "Certificate",
            "NetworkPolicy",
            "ServiceMonitor",
        ];
        for doc in &docs {
            let kind = doc["kind"].as_str().unwrap();
            let name = doc["metadata"]["name"].as_str().unwrap();
            let namespace = &doc["metadata"]["namespace"];
            if name == "providers-controller-edge-credentials" {
                assert_eq!(namespace, "providers-edges", "{mode}: {doc}");
            } else if NAMESPACED.contains(&kind) {
                assert_eq!(namespace, "team-platform", "{mode}: {doc}");
            } else {
                assert!(
                    namespace.is_null(),
                    "{mode}: cluster-wide but namespaced: {doc}"
                );
            }
            for subject in doc["subjects"].as_array().into_iter().flatten() {
                if subject["kind"] == "ServiceAccount" {
                    assert_eq!(subject["namespace"], "team-platform", "{mode}: {doc}");
                }
            }
        }
        let confinement = find(
            &docs,
            "ValidatingAdmissionPolicy",
            "providers-installer-confinement",
        );
        assert_eq!(
            confinement["spec"]["matchConditions"][0],
            serde_json::json!({
                "name": "the-installer",
                "expression": "request.userInfo.username == 'system:serviceaccount:team-platform:providers-controller'",
            }),
            "{mode}"
        );
        let edges = find(&docs, "Namespace", "providers-edges");
        assert_eq!(
            edges["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted",
            "{mode}"
        );
        assert!(
            !has(&docs, "Namespace", "team-platform"),
            "{mode}: the chart creates the release namespace"
        );
        // The controller reads its namespace from its Pod.
        let controller = find(&docs, "Deployment", "providers-controller");
        let env = container(controller)["env"].as_array().unwrap();
        assert!(
            env.iter().any(|e| e["name"] == "PROVIDERS_NAMESPACE"
                && e["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"),
            "{mode}: {env:?}"
        );
        assert!(
            !args(controller)
                .iter()
                .any(|a| a.starts_with("--namespace")),
            "{mode}"
        );

        let mutating = find(&docs, "MutatingWebhookConfiguration", "providers-webhook");
        let validating = find(&docs, "ValidatingWebhookConfiguration", "providers-webhook");
        for config in [mutating, validating] {
            let service = &config["webhooks"][0]["clientConfig"]["service"];
            assert_eq!(service["name"], "providers-webhook", "{mode}");
            assert_eq!(service["namespace"], "team-platform", "{mode}");
        }
        let webhook_service = find(&docs, "Service", "providers-webhook");
        assert_eq!(webhook_service["metadata"]["namespace"], "team-platform");

        if mode == "cert-manager" {
            for config in [mutating, validating] {
                assert_eq!(
                    config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                    "team-platform/providers-webhook"
                );
                assert!(config["webhooks"][0]["clientConfig"]["caBundle"].is_null());
            }
            let serving = find(&docs, "Certificate", "providers-webhook");
            assert_eq!(
                serving["spec"]["dnsNames"],
                serde_json::json!([
                    "providers-webhook.team-platform.svc",
                    "providers-webhook.team-platform.svc.cluster.local"
                ])
            );
            assert_eq!(serving["spec"]["secretName"], "providers-webhook-tls");
            assert!(!has(&docs, "Secret", "providers-webhook-tls"));
        } else {
            self_signed_certificate_serves_the_service(&docs, "team-platform");
            for kind in ["Certificate", "Issuer"] {
                assert!(
                    !docs.iter().any(|d| d["kind"] == kind),
                    "self-signed mode renders a {kind}"
                );
            }
        }
    }
}

/// Self-signed mode: both configurations carry the CA of the generated Secret, and its
/// certificate is signed by that CA for the Service's DNS names, not for another
/// namespace's.
fn self_signed_certificate_serves_the_service(docs: &[Value], namespace: &str) {
    let secret = find(docs, "Secret", "providers-webhook-tls");
    assert_eq!(secret["type"], "kubernetes.io/tls");
    let ca = b64(&secret["data"]["ca.crt"]);
    let cert = b64(&secret["data"]["tls.crt"]);
    let key = b64(&secret["data"]["tls.key"]);
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        let config = find(docs, kind, "providers-webhook");
        assert!(
            config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].is_null(),
            "{config}"
        );
        let bundle = &config["webhooks"][0]["clientConfig"]["caBundle"];
        assert!(
            bundle.as_str().is_some_and(|b| !b.is_empty()),
            "{kind}: no caBundle"
        );
        let pem = b64(bundle);
        assert!(
            String::from_utf8_lossy(&pem).starts_with("-----BEGIN CERTIFICATE-----"),
            "{kind}: caBundle is not a PEM certificate"
        );
        CertificateDer::from_pem_slice(&pem).expect("the caBundle parses as a certificate");
        assert_eq!(pem, ca, "{kind}: caBundle is not the Secret's CA");
    }
    for host in [
        format!("providers-webhook.{namespace}.svc"),
        format!("providers-webhook.{namespace}.svc.cluster.local"),
    ] {
        verify_serving(&ca, &cert, &host)
            .unwrap_or_else(|e| panic!("the serving certificate does not verify for {host}: {e}"));
    }
    assert!(
        verify_serving(&ca, &cert, "providers-webhook.elsewhere.svc").is_err(),
        "the serving certificate verifies for another namespace's Service"
    );
    let other_ca = Authority::generate("another CA").unwrap().cert_pem;
    assert!(
        verify_serving(
            other_ca.as_bytes(),
            &cert,
            &format!("providers-webhook.{namespace}.svc")
        )
        .is_err(),
        "the serving certificate verifies against a CA that did not sign it"
    );
    // The key is the certificate's (rustls refuses a key that does not match).
    let key = PrivateKeyDer::from_pem_slice(&key).expect("tls.key is a PEM private key");
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from_pem_slice(&cert).unwrap()], key)
        .expect("tls.key belongs to tls.crt");
}

// --- 3. the chart and the kustomize build agree ----------------------------------------

/// With the values that say what the kustomize build says (cert-manager, the callers' CA
/// in providers-webhook-callers, providers-system), the chart renders the same objects, and
/// the fields that must never drift are equal: CRDs entirely, RBAC rules and bindings,
/// admission policies, the webhook configurations' admission fields, both Deployments'
/// containers and Pod specs, Services, the PDB, the certificates and the platform config.
#[test]
fn the_chart_renders_what_the_kustomize_build_renders() {
    let root = binaries::workspace_root().unwrap();
    // The copies the chart ships are the generated files themselves.
    for (copy, original) in [
        ("crds/recipes.yaml", "manifests/crds/recipes.yaml"),
        ("crds/edges.yaml", "manifests/crds/edges.yaml"),
        ("crds/workspaces.yaml", "manifests/crds/workspaces.yaml"),
        (
            "files/values-bounds.yaml",
            "manifests/policies/values-bounds.yaml",
        ),
    ] {
        let copy_path = root.join(CHART).join(copy);
        assert!(
            std::fs::read(&copy_path).unwrap() == std::fs::read(root.join(original)).unwrap(),
            "{} is not a copy of {original}: cp {original} {}",
            copy_path.display(),
            copy_path.display()
        );
    }

    let helm = Helm::new();
    let chart = by_identity(&documents(&helm.template(
        "providers-system",
        &[
            "--set",
            "webhook.callers.existingConfigMap=providers-webhook-callers",
        ],
    )));
    let mut kustomized = by_identity(&documents(&kustomize(&root.join("manifests"))));
    // The release namespace is Helm's to make (--create-namespace), not the chart's.
    let namespace = (
        "Namespace".to_owned(),
        String::new(),
        "providers-system".to_owned(),
    );
    assert!(kustomized.remove(&namespace).is_some());
    let missing: Vec<_> = kustomized
        .keys()
        .filter(|k| !chart.contains_key(*k))
        .collect();
    let extra: Vec<_> = chart
        .keys()
        .filter(|k| !kustomized.contains_key(*k))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the chart lacks {missing:?} and adds {extra:?}"
    );

    let mut compared = 0;
    for (identity, expected) in &kustomized {
        let actual = &chart[identity];
        let (kind, _, name) = identity;
        let mut same = |what: &str, expected: &Value, actual: &Value| {
            compared += 1;
            assert!(
                normalized(expected, true) == normalized(actual, true),
                "{kind}/{name} {what} drifted\nkustomize: {expected:#}\nchart: {actual:#}"
            );
        };
        match kind.as_str() {
            "CustomResourceDefinition" => {
                compared += 1;
                assert!(
                    normalized(expected, false) == normalized(actual, false),
                    "{name} differs from manifests/crds\nkustomize: {expected:#}\nchart: {actual:#}"
                );
            }
            "ClusterRole" | "Role" => same("rules", &expected["rules"], &actual["rules"]),
            "ClusterRoleBinding" | "RoleBinding" => {
                same("roleRef", &expected["roleRef"], &actual["roleRef"]);
                same("subjects", &expected["subjects"], &actual["subjects"]);
            }
            "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding" => {
                same("spec", &expected["spec"], &actual["spec"]);
            }
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
                same(
                    "inject-ca-from",
                    &expected["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                    &actual["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                );
                let count = |c: &Value| c["webhooks"].as_array().map_or(0, Vec::len);
                assert_eq!(count(expected), count(actual), "{kind}: webhooks");
                for (e, a) in expected["webhooks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(actual["webhooks"].as_array().unwrap())
                {
                    for field in [
                        "name",
                        "rules",
                        "matchConditions",
                        "failurePolicy",
                        "sideEffects",
                        "timeoutSeconds",
                        "admissionReviewVersions",
                        "matchPolicy",
                        "reinvocationPolicy",
                    ] {
                        same(field, &e[field], &a[field]);
                    }
                    same(
                        "clientConfig.service",
                        &e["clientConfig"]["service"],
                        &a["clientConfig"]["service"],
                    );
                }
            }
            "Deployment" => {
                same(
                    "selector",
                    &expected["spec"]["selector"],
                    &actual["spec"]["selector"],
                );
                same(
                    "replicas",
                    &expected["spec"]["replicas"],
                    &actual["spec"]["replicas"],
                );
                same(
                    "strategy",
                    &expected["spec"]["strategy"],
                    &actual["spec"]["strategy"],
                );
                // The Pod spec but its containers, then the container field by field.
                let pod = |d: &Value| {
                    let mut spec = d["spec"]["template"]["spec"].clone();
                    spec.as_object_mut().unwrap().remove("containers");
                    spec
                };
                same("Pod spec", &pod(expected), &pod(actual));
                let (e, a) = (container(expected), container(actual));
                let fields: Vec<&String> = e
                    .as_object()
                    .unwrap()
                    .keys()
                    .chain(a.as_object().unwrap().keys())
                    .collect();
                for field in fields {
                    same(&format!("container {field}"), &e[field], &a[field]);
                }
                let count = |d: &Value| {
                    d["spec"]["template"]["spec"]["containers"]
                        .as_array()
                        .map_or(0, Vec::len)
                };
                assert_eq!(count(expected), count(actual), "{name}: containers");
            }
            "Service" | "PodDisruptionBudget" | "Certificate" | "Issuer" => {
                same("spec", &expected["spec"], &actual["spec"]);
            }
            "ConfigMap" => same("data", &expected["data"], &actual["data"]),
            "ServiceAccount" => {}
            "Namespace" => same(
                "Pod Security label",
                &expected["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
                &actual["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
            ),
            other => panic!("{other}/{name}: a kind this test does not compare yet"),
        }
    }
    assert!(compared > 60, "compared {compared} fields");
}

/// Where the API server cannot present a client certificate: the chart's webhook matches
/// the unauthenticated-callers and network-policy components of the kustomize build (no
/// --client-ca, no callers' volume, only the API server's addresses admitted), and flags
/// are added only when values ask for them.
#[test]
fn unauthenticated_callers_and_the_network_policy_match_the_components() {
    let root = binaries::workspace_root().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(root.join("manifests"))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let overlay = dir.path().join("managed");
    std::fs::create_dir_all(&overlay).unwrap();
    std::fs::write(
        overlay.join("kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../manifests\ncomponents:\n  - ../manifests/components/unauthenticated-callers\n  - ../manifests/components/network-policy\n",
    )
    .unwrap();
    let kustomized = documents(&kustomize(&overlay));
    let helm = Helm::new();
    let chart = documents(&helm.template(
        "providers-system",
        &[
            "--set",
            "webhook.allowUnauthenticatedCallers=true",
            "--set",
            "networkPolicy.enabled=true",
            "--set",
            "networkPolicy.apiServerCIDRs={192.0.2.0/24}",
        ],
    ));
    let (expected, actual) = (
        find(&kustomized, "Deployment", "providers-webhook"),
        find(&chart, "Deployment", "providers-webhook"),
    );
    assert_eq!(args(expected), args(actual));
    assert!(args(actual).contains(&"--allow-unauthenticated-callers".to_owned()));
    assert!(!args(actual).iter().any(|a| a.starts_with("--client-ca")));
    assert_eq!(
        container(expected)["volumeMounts"],
        container(actual)["volumeMounts"]
    );
    assert_eq!(
        expected["spec"]["template"]["spec"]["volumes"],
        actual["spec"]["template"]["spec"]["volumes"]
    );
    assert!(!has(&chart, "ConfigMap", "providers-webhook-callers"));
    assert_eq!(
        find(&kustomized, "NetworkPolicy", "providers-webhook")["spec"],
        find(&chart, "NetworkPolicy", "providers-webhook")["spec"]
    );

    // A caBundle in the values: the chart writes the ConfigMap the webhook reads it from.
    let ca = Authority::generate("callers").unwrap().cert_pem;
    let file = helm.write("callers-ca.crt", &ca);
    let chart = documents(&helm.ok([
        "template".to_owned(),
        "providers".to_owned(),
        CHART.to_owned(),
        "--set-file".to_owned(),
        format!("webhook.callers.caBundle={}", file.display()),
        "--set".to_owned(),
        "edgeCredentials.namespace=edge-secrets".to_owned(),
        "--set".to_owned(),
        "controller.helmImage=registry.example/helm:3".to_owned(),
        "--set".to_owned(),
        "webhook.extraArgs={--review-budget-mib=16}".to_owned(),
    ]));
    let callers = find(&chart, "ConfigMap", "providers-webhook-callers");
    assert_eq!(
        callers["data"]["ca.crt"].as_str().unwrap().trim(),
        ca.trim()
    );
    let webhook = find(&chart, "Deployment", "providers-webhook");
    assert!(args(webhook).contains(&"--client-ca=/etc/providers/callers/ca.crt".to_owned()));
    assert_eq!(args(webhook).last().unwrap(), "--review-budget-mib=16");
    let volumes = webhook["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap();
    assert!(
        volumes
            .iter()
            .any(|v| v["configMap"]["name"] == "providers-webhook-callers"),
        "{volumes:?}"
    );
    // Another edge-credentials namespace and a runner image are passed to the installer.
    let controller = args(find(&chart, "Deployment", "providers-controller"));
    assert_eq!(
        controller,
        [
            "controller",
            "--metrics-listen=0.0.0.0:8080",
            "--log-format=json",
            "--edge-credentials-namespace=edge-secrets",
            "--helm-image=registry.example/helm:3",
        ]
    );
    let role = find(&chart, "Role", "providers-controller-edge-credentials");
    assert_eq!(role["metadata"]["namespace"], "edge-secrets");
}

// --- 4. the real API server ------------------------------------------------------------

/// The text of a helm install's manifest (between MANIFEST: and NOTES:).
fn manifest(output: &str) -> Vec<Value> {
    let start = output
        .find("MANIFEST:\n")
        .unwrap_or_else(|| panic!("no MANIFEST in:\n{output}"));
    let rest = &output[start + "MANIFEST:\n".len()..];
    let end = rest.find("\nNOTES:\n").unwrap_or(rest.len());
    documents(&rest[..end])
}

/// helm's server-side dry run in a fresh namespace, in both certificate modes (cert-manager
/// mode once cert-manager's CRDs are there); then a real install, whose Pods meet the
/// restricted Pod Security Standard of the namespace, and an upgrade that keeps the
/// self-signed CA and serving certificate; then, after an uninstall, cert-manager mode in
/// another namespace, reusing the edges' namespace the first release kept.
#[test]
fn the_api_server_takes_the_chart() {
    let plane = supervised::shared(Path::new(env!("CARGO_BIN_EXE_providers-controlplane")));
    let admin = plane.kubeconfig(User::Admin);
    let root = binaries::workspace_root().unwrap();
    let helm = Helm::new();
    let kubeconfig = admin.to_str().unwrap();
    let namespace = |name: &str| {
        kubectl::ok(admin, &["create", "namespace", name]).unwrap();
        kubectl::ok(
            admin,
            &[
                "label",
                "namespace",
                name,
                "pod-security.kubernetes.io/enforce=restricted",
                "pod-security.kubernetes.io/warn=restricted",
            ],
        )
        .unwrap();
    };

    // Without cert-manager's CRDs, cert-manager mode cannot be mapped: the dry run asks the
    // API server.
    namespace("chart-dry-cert-manager");
    let out = helm.fails([
        "install",
        "providers",
        CHART,
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        "chart-dry-cert-manager",
        "--dry-run=server",
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
    ]);
    assert!(
        out.contains("no matches for kind \"Certificate\" in version \"cert-manager.io/v1\""),
        "{out}"
    );
    let fixtures = root.join("tests/fixtures/cert-manager/crds.yaml");
    kubectl::ok(
        admin,
        &["apply", "--server-side", "-f", fixtures.to_str().unwrap()],
    )
    .unwrap();
    kubectl::ok(
        admin,
        &[
            "wait",
            "--for",
            "condition=Established",
            "crd/certificates.cert-manager.io",
            "crd/issuers.cert-manager.io",
        ],
    )
    .unwrap();

    namespace("chart-dry-self-signed");
    for (mode, ns) in [
        ("self-signed", "chart-dry-self-signed"),
        ("cert-manager", "chart-dry-cert-manager"),
    ] {
        let out = helm.ok([
            "install",
            "providers",
            CHART,
            "--kubeconfig",
            kubeconfig,
            "--namespace",
            ns,
            "--dry-run=server",
            "--set",
            format!("certificates.mode={mode}").as_str(),
            "--set",
            "webhook.allowUnauthenticatedCallers=true",
        ]);
        assert!(out.contains("DESCRIPTION: Dry run complete"), "{out}");
        assert!(out.contains(&format!("NAMESPACE: {ns}")), "{out}");
        let docs = manifest(&out);
        for (kind, name) in [
            ("Deployment", "providers-webhook"),
            ("Deployment", "providers-controller"),
            ("Service", "providers-webhook"),
            ("Service", "providers-controller-metrics"),
            ("PodDisruptionBudget", "providers-webhook"),
            ("PodDisruptionBudget", "providers-controller"),
            ("ConfigMap", "providers-config"),
            ("Role", "providers-controller"),
        ] {
            assert_eq!(
                find(&docs, kind, name)["metadata"]["namespace"],
                ns,
                "{mode}: {kind}/{name}"
            );
        }
        for (kind, name) in [
            ("MutatingWebhookConfiguration", "providers-webhook"),
            ("ValidatingWebhookConfiguration", "providers-webhook"),
            (
                "ValidatingAdmissionPolicy",
                "providers-installer-confinement",
            ),
            ("ValidatingAdmissionPolicy", "providers-values-bounds"),
            ("ClusterRole", "providers-tenant"),
            ("Namespace", "providers-edges"),
        ] {
            find(&docs, kind, name);
        }
        if mode == "self-signed" {
            self_signed_certificate_serves_the_service(&docs, ns);
        } else {
            find(&docs, "Certificate", "providers-webhook");
            find(&docs, "Issuer", "providers-ca");
        }
        assert!(
            out.contains(&format!(
                "kubectl -n {ns} create secret generic providers-sealing-key"
            )),
            "the notes tell how to create the sealing key in the namespace:\n{out}"
        );
    }

    // A real install (no kubelet here: the Pods are never started), with the API server's
    // own webhook client CA as the callers' CA.
    namespace("chart-live");
    let install = |verb: &str| {
        let (out, shown) = helm.run([
            verb.to_owned(),
            "providers".to_owned(),
            CHART.to_owned(),
            "--kubeconfig".to_owned(),
            kubeconfig.to_owned(),
            "--namespace".to_owned(),
            "chart-live".to_owned(),
            "--set".to_owned(),
            "certificates.mode=self-signed".to_owned(),
            "--set-file".to_owned(),
            format!(
                "webhook.callers.caBundle={}",
                plane.webhook_client_ca_file.display()
            ),
        ]);
        assert!(out.status.success(), "{shown}");
        // The namespace warns of anything the restricted standard would refuse.
        assert!(!shown.contains("PodSecurity"), "{shown}");
        shown
    };
    let shown = install("install");
    assert!(shown.contains("STATUS: deployed"), "{shown}");
    let get = |args: &[&str]| kubectl::ok(admin, args).unwrap();
    let tls = |key: &str| {
        get(&[
            "-n",
            "chart-live",
            "get",
            "secret",
            "providers-webhook-tls",
            "-o",
            &format!("jsonpath={{.data.{}}}", key.replace('.', "\\.")),
        ])
    };
    let bundle = |kind: &str| {
        get(&[
            "get",
            kind,
            "providers-webhook",
            "-o",
            "jsonpath={.webhooks[0].clientConfig.caBundle}",
        ])
    };
    let (ca, cert) = (tls("ca.crt"), tls("tls.crt"));
    assert!(!ca.is_empty() && !cert.is_empty());
    for kind in [
        "mutatingwebhookconfiguration",
        "validatingwebhookconfiguration",
    ] {
        assert_eq!(bundle(kind), ca, "{kind}");
    }
    let callers = get(&[
        "-n",
        "chart-live",
        "get",
        "configmap",
        "providers-webhook-callers",
        "-o",
        "jsonpath={.data.ca\\.crt}",
    ]);
    let expected = std::fs::read_to_string(&plane.webhook_client_ca_file).unwrap();
    assert_eq!(callers.trim(), expected.trim());
    let confinement = get(&[
        "get",
        "validatingadmissionpolicy",
        "providers-installer-confinement",
        "-o",
        "jsonpath={.spec.matchConditions[0].expression}",
    ]);
    assert!(
        confinement.contains("system:serviceaccount:chart-live:providers-controller"),
        "{confinement}"
    );
    get(&["get", "crd", "workspaces.providers.platform.dev"]);
    let edges = get(&[
        "get",
        "namespace",
        "providers-edges",
        "-o",
        "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}",
    ]);
    assert_eq!(edges, "restricted");
    get(&[
        "-n",
        "providers-edges",
        "get",
        "rolebinding",
        "providers-controller-edge-credentials",
    ]);

    // An upgrade looks the Secret up and keeps the CA and the certificate.
    let shown = install("upgrade");
    assert!(shown.contains("REVISION: 2"), "{shown}");
    assert_eq!(tls("ca.crt"), ca, "the upgrade rotated the CA");
    assert_eq!(
        tls("tls.crt"),
        cert,
        "the upgrade rotated the serving certificate"
    );
    for kind in [
        "mutatingwebhookconfiguration",
        "validatingwebhookconfiguration",
    ] {
        assert_eq!(bundle(kind), ca, "{kind} after the upgrade");
    }

    // Uninstalled, the edges' namespace (and their credentials) stays; cert-manager mode
    // then installs in another namespace, told that the edges' namespace exists.
    helm.ok([
        "uninstall",
        "providers",
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        "chart-live",
    ]);
    get(&["get", "namespace", "providers-edges"]);
    let gone = kubectl::run(
        admin,
        &[
            "get",
            "clusterrole",
            "providers-controller",
            "--ignore-not-found",
            "-o",
            "name",
        ],
    )
    .unwrap();
    assert!(gone.status.success() && gone.stdout.is_empty(), "{gone:?}");
    namespace("chart-live-cert-manager");
    let out = helm.ok([
        "install",
        "providers",
        CHART,
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        "chart-live-cert-manager",
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "edgeCredentials.createNamespace=false",
    ]);
    assert!(out.contains("STATUS: deployed"), "{out}");
    for kind in [
        "mutatingwebhookconfiguration",
        "validatingwebhookconfiguration",
    ] {
        let annotation = get(&[
            "get",
            kind,
            "providers-webhook",
            "-o",
            "jsonpath={.metadata.annotations.cert-manager\\.io/inject-ca-from}",
        ]);
        assert_eq!(annotation, "chart-live-cert-manager/providers-webhook");
    }
    let names = get(&[
        "-n",
        "chart-live-cert-manager",
        "get",
        "certificate",
        "providers-webhook",
        "-o",
        "jsonpath={.spec.dnsNames}",
    ]);
    assert!(
        names.contains("providers-webhook.chart-live-cert-manager.svc"),
        "{names}"
    );
}

/// The chart's installer defaults to what manifests/ ships (ADR 40): three replicas, each
/// working its share of the edges (the only mode), spread over nodes but never kept off
/// one, and a PodDisruptionBudget of one that never waits on a replica that is not Ready.
/// One replica has the same arguments and budget (a drain may evict it). An upgrade that
/// reuses an earlier release's `controller.shardEdges=false` (one leader and a standby)
/// stops with the way to upgrade; `true` renders as the default; the budget can be left
/// out.
#[test]
fn the_installer_defaults_to_three_sharing_replicas_with_a_disruption_budget() {
    let helm = Helm::new();
    let render = |values: &[&str]| {
        let mut all = vec!["--set", "webhook.allowUnauthenticatedCallers=true"];
        for value in values {
            all.extend(["--set", value]);
        }
        documents(&helm.template("providers-system", &all))
    };
    let default = render(&[]);
    let deployment = find(&default, "Deployment", "providers-controller");
    assert_eq!(deployment["spec"]["replicas"], 3, "{deployment}");
    assert_eq!(
        args(deployment),
        [
            "controller",
            "--metrics-listen=0.0.0.0:8080",
            "--log-format=json"
        ]
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
    let budget = find(&default, "PodDisruptionBudget", "providers-controller");
    assert_eq!(budget["spec"]["maxUnavailable"], 1, "{budget}");
    assert_eq!(budget["spec"]["unhealthyPodEvictionPolicy"], "AlwaysAllow");
    assert!(budget["spec"]["minAvailable"].is_null(), "{budget}");
    assert_eq!(budget["spec"]["selector"], deployment["spec"]["selector"]);

    let one = render(&["controller.replicas=1"]);
    let single = find(&one, "Deployment", "providers-controller");
    assert_eq!(single["spec"]["replicas"], 1);
    assert_eq!(args(single), args(deployment));
    assert_eq!(
        find(&one, "PodDisruptionBudget", "providers-controller")["spec"],
        budget["spec"]
    );

    // An earlier release's values, reused by `helm upgrade --reuse-values`.
    let refused = helm.fails([
        "template",
        "providers",
        CHART,
        "--set",
        "webhook.allowUnauthenticatedCallers=true",
        "--set",
        "controller.shardEdges=false",
    ]);
    assert!(
        refused.contains("controller.shardEdges=false")
            && refused.contains("Scale the installer to 0 first")
            && refused.contains("Upgrading from the leader-standby mode"),
        "{refused}"
    );
    let kept = render(&["controller.shardEdges=true"]);
    assert_eq!(
        find(&kept, "Deployment", "providers-controller"),
        deployment,
        "the old default renders as today's"
    );

    // `helm upgrade --reuse-values` renders with the values of the chart it upgrades,
    // which may have no controller.pdb: the budget is rendered all the same.
    let older = render(&["controller.pdb=null"]);
    assert!(has(&older, "PodDisruptionBudget", "providers-controller"));
    let without = render(&["controller.pdb.enabled=false"]);
    assert!(!has(
        &without,
        "PodDisruptionBudget",
        "providers-controller"
    ));
    assert!(has(&without, "PodDisruptionBudget", "providers-webhook"));
}
