//! The provider's runtime credential: a token of its hub ServiceAccount from the
//! TokenRequest API, in a kubeconfig for the hub.

use base64::{Engine, engine::general_purpose::STANDARD};
use k8s_openapi::api::{
    authentication::v1::{TokenRequest, TokenRequestSpec},
    core::v1::ServiceAccount,
};
use kube::{Api, Client, api::PostParams};
use serde_json::json;

/// Where providers reach the hub.
#[derive(Clone, Debug)]
pub struct HubEndpoint {
    pub server: String,
    pub ca_pem: String,
    pub ttl_seconds: i64,
}

/// Mints a token for `namespace/service_account` and returns a kubeconfig that uses it.
pub async fn mint(
    hub: &Client,
    endpoint: &HubEndpoint,
    namespace: &str,
    service_account: &str,
) -> Result<String, kube::Error> {
    let api: Api<ServiceAccount> = Api::namespaced(hub.clone(), namespace);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(endpoint.ttl_seconds),
            ..Default::default()
        }),
        ..Default::default()
    };
    let answer = api
        .create_token_request(service_account, &PostParams::default(), &request)
        .await?;
    let token = answer.status.and_then(|s| s.token).unwrap_or_default();
    Ok(kubeconfig(endpoint, namespace, service_account, &token))
}

/// A kubeconfig for one bearer token (JSON, which every kubeconfig reader accepts as YAML).
pub fn kubeconfig(endpoint: &HubEndpoint, namespace: &str, user: &str, token: &str) -> String {
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "hub", "cluster": {
            "server": endpoint.server,
            "certificate-authority-data": STANDARD.encode(&endpoint.ca_pem),
        }}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": user, "namespace": namespace}}],
        "current-context": "hub",
    });
    serde_norway::to_string(&config).unwrap_or_else(|_| config.to_string())
}

/// DER certificates as PEM text.
pub fn pem_of(certificates: &[Vec<u8>]) -> String {
    let mut pem = String::new();
    for der in certificates {
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        let text = STANDARD.encode(der);
        for line in text.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(line));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    pem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_names_the_hub_and_the_token() {
        let endpoint = HubEndpoint {
            server: "https://hub:6443".into(),
            ca_pem: "PEM".into(),
            ttl_seconds: 60,
        };
        let text = kubeconfig(&endpoint, "org-a", "provider-demo", "t0k3n");
        let parsed = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        assert_eq!(
            parsed.clusters[0]
                .cluster
                .as_ref()
                .unwrap()
                .server
                .as_deref(),
            Some("https://hub:6443")
        );
        assert!(text.contains("t0k3n"));
    }

    #[test]
    fn der_is_wrapped_at_64_columns() {
        let pem = pem_of(&[vec![0u8; 100]]);
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
        assert!(pem.lines().all(|l| l.len() <= 64));
    }
}
