#!/usr/bin/env bash
# Without cert-manager: makes a CA and the webhook's serving certificate with openssl,
# writes the serving certificate as a Secret manifest into OUTDIR, and the CA into this
# overlay's caBundle patch (ca-bundle.yaml). Run it again to rotate both.
#   manifests/overlays/self-signed/generate.sh OUTDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: generate.sh OUTDIR}"
mkdir -p "$out"
cd "$out"
service=providers-webhook.providers-system.svc
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 730 \
	-subj "/CN=providers-webhook-ca" -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-subj "/CN=${service}" -keyout tls.key -out tls.csr 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:%s.cluster.local\nextendedKeyUsage=serverAuth\n' "$service" "$service" >ext.cnf
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
	-extfile ext.cnf -out tls.crt 2>/dev/null
kubectl create secret tls providers-webhook-tls --namespace providers-system \
	--cert=tls.crt --key=tls.key --dry-run=client -o yaml >webhook-tls-secret.yaml
sed -i "s|^  value: .*$|  value: $(base64 -w0 <ca.crt)|" "$here/ca-bundle.yaml"
echo "wrote $out/webhook-tls-secret.yaml and the caBundle in $here/ca-bundle.yaml"
