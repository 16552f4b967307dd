#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, etcd) and helm from their Go modules.
#
# The binaries are cached outside the work tree, keyed by a hash of each wrapper
# module's files, so a fresh clone on the same machine reuses them. The result is
# linked into target/controlplane/bin, where the test support library looks first.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${PROVIDER_SEALER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-sealer}"
out="$root/target/controlplane/bin"
mkdir -p "$out"

k8s_version=v1.37.2
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${k8s_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"

export CGO_ENABLED=0
# Two cores and large packages: one package at a time keeps memory predictable.
export GOFLAGS="${GOFLAGS:--p=2}"

build() {
	local name="$1" package="$2" flags="$3"
	local dir="$here/$name"
	local key
	key="$( (cd "$dir" && cat go.mod go.sum ./*.go; echo "$flags"; go version) | sha256sum | cut -c1-16)"
	local bin="$cache/$name-$key/$name"
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

build etcd . "-s -w"
build helm helm.sh/helm/v4/cmd/helm "-s -w"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$ldflags"
echo "$out"
