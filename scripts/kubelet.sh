#!/usr/bin/env bash
# Prints the path of a kubelet built from tools/kubelet (k8s.io/kubernetes, the version its go.mod
# names), building it only when no cached binary matches. A cold build is about 6 CPU-minutes; the
# cache key is the tools module's go.mod and go.sum and the Go version, so a warm `make test` pays
# nothing and a version bump rebuilds.
#
# `kubelet.sh NAME` does the same for another command of k8s.io/kubernetes that tools/kubelet
# pins (kube-apiserver, kube-controller-manager, kube-proxy: integration/cluster); after the
# kubelet each takes about a minute more, most packages being built already.
#
# Cache: $DRAINIT_CACHE, else $XDG_CACHE_HOME/drainit, else ~/.cache/drainit.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/tools/kubelet"
name=${1:-kubelet}
case "$name" in
  kubelet|kube-apiserver|kube-controller-manager|kube-proxy) ;;
  *) echo "kubelet.sh: $name: not one of kubelet, kube-apiserver, kube-controller-manager, kube-proxy" >&2; exit 2 ;;
esac
go=${GO:-go}
cache=${DRAINIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/drainit}

version=$(sed -n 's/^require k8s.io\/kubernetes \(v[^ ]*\)$/\1/p' "$mod/go.mod")
if [ -z "$version" ]; then
  echo "kubelet.sh: no 'require k8s.io/kubernetes vX.Y.Z' line in $mod/go.mod" >&2
  exit 1
fi
key=$( { cat "$mod/go.mod" "$mod/go.sum"; "$go" version; } | sha256sum | cut -c1-16)
out="$cache/$name-$version-$key"

if [ -x "$out" ]; then
  echo "$out"
  exit 0
fi

mkdir -p "$cache"
echo "kubelet.sh: building $name $version (cold: several minutes)..." >&2
tmp=$(mktemp "$cache/.$name-build.XXXXXX")
trap 'rm -f "$tmp"' EXIT
# The version stamp is what `kubelet --version` and the kubelet's own logs report; without it a
# module build says v0.0.0-master.
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$(echo "${version#v}" | cut -d. -f1)"
ldflags="$ldflags -X $pkg.gitMinor=$(echo "$version" | cut -d. -f2) -X $pkg.gitTreeState=clean"
# GOWORK=off: tools/kubelet is a module of its own, outside the repository's workspace (go.work).
(cd "$mod" && GOWORK=off CGO_ENABLED=0 "$go" build -trimpath -ldflags "$ldflags" -o "$tmp" "k8s.io/kubernetes/cmd/$name")
chmod 0755 "$tmp"
# Atomic: a concurrent or interrupted build never leaves a half-written binary at $out.
mv -f "$tmp" "$out"
trap - EXIT
# Older builds are 120 MB each and nothing uses them any more.
find "$cache" -maxdepth 1 -name "$name-v*" ! -name "$(basename "$out")" -delete
echo "$out"
