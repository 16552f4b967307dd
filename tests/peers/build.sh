#!/usr/bin/env bash
# Builds the project's peers from their Go modules:
# - helm-controller: k3s-io/helm-controller, which the peer benchmarks run
#   (tests/benches/peer_*.rs; helm-controller/ is a wrapper module whose main.go runs
#   helm-controller's own application package);
# - gitops-engines: the health and apply code of Flux (fluxcd/pkg/ssa, kstatus) and
#   Argo CD (gopher-lua), which the GitOps tests ask (tests/tests/gitops_engines.rs).
#
# Usage: build.sh [NAME...]; without names, all of them.
#
# As in tests/controlplane/build.sh, the binaries are cached outside the work tree, keyed
# by a hash of each wrapper module's files, the flags and the Go version, so a fresh clone
# on the same machine reuses them. The result is linked into target/peers/bin, where the
# benches look for it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${PROVIDER_SEALER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-sealer}"
out="$root/target/peers/bin"
mkdir -p "$out"

export CGO_ENABLED=0
# Two cores and large packages: keep the build's parallelism and memory predictable. No
# VCS stamp: the wrapper lives in this repository's work tree, whose state is no input.
export GOFLAGS="${GOFLAGS:--p=2 -buildvcs=false}"
# The go.mod files name the Go version they need; the machine's toolchain must satisfy it
# (no toolchain is downloaded).
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

build() {
	local name="$1" package="$2" flags="$3"
	local dir="$here/$name"
	local key
	key="$( (cd "$dir" && cat go.mod go.sum ./*.go; echo "$flags $GOFLAGS"; go version) | sha256sum | cut -c1-16)"
	local bin="$cache/peer-$name-$key/$name"
	if [[ ! -x "$bin" ]]; then
		echo "building $name ($package); cached at $bin" >&2
		mkdir -p "$(dirname "$bin")"
		local started=$SECONDS
		(cd "$dir" && go build -trimpath -ldflags "$flags" -o "$bin.tmp" "$package")
		mv "$bin.tmp" "$bin"
		echo "built $name in $((SECONDS - started))s" >&2
	fi
	ln -sfn "$bin" "$out/$name"
}

names=("$@")
wanted() { [[ ${#names[@]} -eq 0 || " ${names[*]} " == *" $1 "* ]]; }

# Upstream's release build sets the version with -X; the same variables here.
helm_controller_version=v0.17.9
if wanted helm-controller; then
	build helm-controller . "-s -w -X github.com/k3s-io/helm-controller/pkg/version.Version=${helm_controller_version}"
fi
if wanted gitops-engines; then
	build gitops-engines . "-s -w"
fi
echo "$out"
