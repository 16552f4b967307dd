#!/usr/bin/env bash
# The shared core (providers-shared) is API types and pure decisions. None of its normal
# dependencies may be a Kubernetes client, an HTTP or TLS stack, or an async runtime: the
# webhook, the plugin and the tests bring those. Exits 1, naming each such crate and what
# pulls it in, when one is there (a kube feature such as "client" added to shared would).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

forbidden=(
	kube-client kube-runtime
	hyper hyper-util hyper-rustls hyper-timeout hyper-openssl
	tower tower-http
	rustls tokio-rustls openssl
	reqwest
	tokio tokio-util
)

tree=$(cargo tree -p providers-shared -e normal --prefix none "$@")
found=()
for crate in "${forbidden[@]}"; do
	if grep -q "^$crate v" <<<"$tree"; then
		found+=("$crate")
	fi
done

if ((${#found[@]})); then
	echo "check-pure-core: FAILED: providers-shared depends on ${found[*]}" >&2
	for crate in "${found[@]}"; do
		echo "--- what pulls $crate into providers-shared:" >&2
		cargo tree -p providers-shared -e normal --invert "$crate" --depth 4 "$@" >&2 || true
	done
	exit 1
fi
echo "check-pure-core: providers-shared depends on none of: ${forbidden[*]}"
