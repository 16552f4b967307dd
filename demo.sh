#!/usr/bin/env bash
# The demo: builds what it needs, starts a local control plane with the webhook and a
# sample recipe, and keeps it running for you until Ctrl-C.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
bash tests/controlplane/build.sh >/dev/null
cargo build --workspace --bins --locked
exec target/debug/providers-demo "$@"
