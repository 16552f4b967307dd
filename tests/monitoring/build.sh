#!/usr/bin/env bash
# Builds promtool (and, when asked, prometheus) from the github.com/prometheus/prometheus Go
# module, v0.316.0 (Prometheus 3.16.0): the rule checks and unit tests of
# manifests/monitoring/rules.yaml (tests/tests/monitoring.rs) run promtool; the evaluation
# of the dashboard's queries and the alerts against the demo (tests/monitoring/evaluate.sh)
# runs prometheus.
#
# Usage: build.sh [promtool] [prometheus]; without names, promtool only.
#
# As in tests/controlplane/build.sh, the binaries are cached outside the work tree, keyed
# by a hash of the wrapper module's files, the flags and the Go version, so a fresh clone
# on the same machine reuses them. The result is linked into target/monitoring/bin, where
# the tests look for it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${PROVIDER_SEALER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-sealer}"
out="$root/target/monitoring/bin"
mkdir -p "$out"

export CGO_ENABLED=0
# Two cores and large packages: keep the build's parallelism and memory predictable. No
# VCS stamp: the wrapper lives in this repository's work tree, whose state is no input.
export GOFLAGS="${GOFLAGS:--p=2 -buildvcs=false}"
# The go.mod names the Go version it needs; the machine's toolchain must satisfy it.
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

prometheus_version=3.16.0
flags="-s -w -X github.com/prometheus/common/version.Version=${prometheus_version}"
# Without the service discovery plugins (AWS, Azure, GCE, Consul, ...: Prometheus's own
# build tag): the tests scrape static targets, and the SDKs would triple the build.
# promtool keeps the Kubernetes discovery it imports itself.
tags="remove_all_sd"
dir="$here/prometheus"

build() {
	local name="$1"
	local package="github.com/prometheus/prometheus/cmd/$name"
	local key
	key="$( (cd "$dir" && cat go.mod go.sum ./*.go; echo "$name $flags $tags $GOFLAGS"; go version) | sha256sum | cut -c1-16)"
	local bin="$cache/$name-$key/$name"
	if [[ ! -x "$bin" ]]; then
		echo "building $name ($package); cached at $bin" >&2
		mkdir -p "$(dirname "$bin")"
		local started=$SECONDS
		(cd "$dir" && go build -trimpath -tags "$tags" -ldflags "$flags" -o "$bin.tmp" "$package")
		mv "$bin.tmp" "$bin"
		echo "built $name in $((SECONDS - started))s" >&2
	fi
	ln -sfn "$bin" "$out/$name"
}

names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(promtool)
for name in "${names[@]}"; do
	case "$name" in
	promtool | prometheus) build "$name" ;;
	*) echo "build.sh: unknown binary $name (promtool, prometheus)" >&2; exit 2 ;;
	esac
done
echo "$out"
