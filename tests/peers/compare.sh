#!/usr/bin/env bash
# The installer against k3s helm-controller, side by side in one sitting: builds both
# (release), then runs installer_scale (hub + PROVIDERS_SCALE_EDGES edges) and the peer
# benchmark (one control plane) alternately, ROUNDS times each, with the same
# PROVIDERS_SCALE_WORKSPACES. Each benchmark prints one machine-readable line per run; they
# are collected at the end.
#   tests/peers/compare.sh [ROUNDS]                      # 1,000 items, 1 edge, 2 rounds
#   PROVIDERS_SCALE_WORKSPACES=200 tests/peers/compare.sh 1   # about 2 minutes
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rounds="${1:-2}"
export PROVIDERS_SCALE_WORKSPACES="${PROVIDERS_SCALE_WORKSPACES:-1000}"
export PROVIDERS_SCALE_EDGES="${PROVIDERS_SCALE_EDGES:-1}"
# No helm storage records and no drift phase: the peer's bench has neither.
export PROVIDERS_SCALE_DRIFT_INTERVAL="${PROVIDERS_SCALE_DRIFT_INTERVAL:-0}"
bash tests/controlplane/build.sh >/dev/null
bash tests/peers/build.sh >/dev/null
cargo build --release --workspace --bins
cargo bench --no-run -p providers-tests --bench installer_scale --bench peer_helm_controller
results="$(mktemp)"
for round in $(seq 1 "$rounds"); do
	echo "# round $round of $rounds" >&2
	cargo bench -q -p providers-tests --bench installer_scale 2>&1 | tee -a /dev/stderr | grep '^installer_scale ' >>"$results"
	cargo bench -q -p providers-tests --bench peer_helm_controller 2>&1 | tee -a /dev/stderr | grep '^peer_helm_controller ' >>"$results"
done
echo
cat "$results"
rm -f "$results"
