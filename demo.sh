#!/usr/bin/env bash
# The demo: builds what it needs, starts a hub and an edge control plane with the webhook,
# the installer and a chart repository, walks a scripted tenant session with
# `kubectl provider`, then stays up for you to explore until Ctrl-C.
#   ./demo.sh                 # the session, then explore
#   ./demo.sh --no-session --env-file demo.env   # just the system, kubeconfig paths in demo.env
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
bash tests/controlplane/build.sh >/dev/null
cargo build --workspace --bins --locked
exec target/debug/providers-demo "$@"
