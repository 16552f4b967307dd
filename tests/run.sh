#!/usr/bin/env bash
# Runs every test: builds the Go control plane, the GitOps engines and promtool (cached),
# the workspace's binaries (the integration tests run them as real processes), then the
# whole test suite.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tests/controlplane/build.sh >/dev/null
bash tests/peers/build.sh gitops-engines >/dev/null
bash tests/monitoring/build.sh promtool >/dev/null
cargo build --workspace --bins --locked
cargo test --workspace --locked "$@"
