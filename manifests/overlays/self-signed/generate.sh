#!/usr/bin/env bash
# Without cert-manager: makes, with openssl, into OUTDIR
# - a CA and the webhook's serving certificate, as a Secret manifest, and the CA into this
#   overlay's caBundle patch (ca-bundle.yaml);
# - a CA for the webhook's callers and the API server's webhook client certificate signed
#   by it, the kubeconfig and AdmissionConfiguration that hand it to the API server
#   (kube-apiserver --admission-control-config-file), and the ConfigMap the webhook reads
#   the callers' CA from.
# Run it again to rotate all of them.
#   manifests/overlays/self-signed/generate.sh OUTDIR [API_SERVER_CONFIG_DIR]
# API_SERVER_CONFIG_DIR (default /etc/kubernetes/providers) is where the client
# certificate, its key and the kubeconfig will be on the API server's hosts.
# PROVIDERS_NAMESPACE (default providers-system) is the platform's namespace: the name in
# this overlay's platform-namespace.yaml.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: generate.sh OUTDIR [API_SERVER_CONFIG_DIR]}"
on_apiserver="${2:-/etc/kubernetes/providers}"
mkdir -p "$out"
cd "$out"
namespace="${PROVIDERS_NAMESPACE:-providers-system}"
service="providers-webhook.${namespace}.svc"
ec() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "$@" 2>/dev/null; }

# The serving certificate.
ec -x509 -days 730 -subj "/CN=providers-webhook-ca" -keyout ca.key -out ca.crt
ec -subj "/CN=${service}" -keyout tls.key -out tls.csr
printf 'subjectAltName=DNS:%s,DNS:%s.cluster.local\nextendedKeyUsage=serverAuth\n' "$service" "$service" >ext.cnf
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
	-extfile ext.cnf -out tls.crt 2>/dev/null
kubectl create secret tls providers-webhook-tls --namespace "$namespace" \
	--cert=tls.crt --key=tls.key --dry-run=client -o yaml >webhook-tls-secret.yaml
sed -i "s|^  value: .*$|  value: $(base64 -w0 <ca.crt)|" "$here/ca-bundle.yaml"

# The API server's webhook client certificate, and what tells the API server to use it.
ec -x509 -days 730 -subj "/CN=providers-webhook-callers-ca" -keyout callers-ca.key -out callers-ca.crt
ec -subj "/CN=kube-apiserver-webhook-client" -keyout apiserver-webhook-client.key -out client.csr
printf 'extendedKeyUsage=clientAuth\n' >client.cnf
openssl x509 -req -in client.csr -CA callers-ca.crt -CAkey callers-ca.key -CAcreateserial \
	-days 365 -extfile client.cnf -out apiserver-webhook-client.crt 2>/dev/null
cat >webhook-admission.kubeconfig <<KUBECONFIG
apiVersion: v1
kind: Config
users:
  - name: "${service}"
    user:
      client-certificate: ${on_apiserver}/apiserver-webhook-client.crt
      client-key: ${on_apiserver}/apiserver-webhook-client.key
KUBECONFIG
cat >admission-configuration.yaml <<CONFIG
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: ValidatingAdmissionWebhook
    configuration:
      apiVersion: apiserver.config.k8s.io/v1
      kind: WebhookAdmissionConfiguration
      kubeConfigFile: ${on_apiserver}/webhook-admission.kubeconfig
  - name: MutatingAdmissionWebhook
    configuration:
      apiVersion: apiserver.config.k8s.io/v1
      kind: WebhookAdmissionConfiguration
      kubeConfigFile: ${on_apiserver}/webhook-admission.kubeconfig
CONFIG
kubectl create configmap providers-webhook-callers --namespace "$namespace" \
	--from-file=ca.crt=callers-ca.crt --dry-run=client -o yaml >webhook-callers-configmap.yaml
rm -f tls.csr client.csr ext.cnf client.cnf
# The CAs' keys: whoever holds the callers' CA key can mint a client certificate the
# webhook accepts. Nothing needs them again (a rotation runs this script anew).
rm -f ca.key callers-ca.key ca.srl callers-ca.srl
echo "wrote $out/webhook-tls-secret.yaml, $out/webhook-callers-configmap.yaml and the caBundle in $here/ca-bundle.yaml"
echo "copy $out/apiserver-webhook-client.{crt,key}, webhook-admission.kubeconfig and admission-configuration.yaml"
echo "to ${on_apiserver} on the API server's hosts, and start kube-apiserver with"
echo "--admission-control-config-file=${on_apiserver}/admission-configuration.yaml (or merge it into yours)"
