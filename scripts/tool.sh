#!/usr/bin/env bash
# Prints the path of a pinned release tool, installing it with `go install` (from the module
# proxy, built from source: no prebuilt binaries are downloaded) only when no cached one matches.
#
#   scripts/tool.sh goreleaser|syft|actionlint
#
# The pins live here, in one place. goreleaser stays at v2.16.0: v2.17.0 needs
# go.digitalxero.dev/go-msix, whose module zip the public proxy refuses (403), and v2.18 needs
# Go 1.27; syft stays at v1.50.0: v1.56 and later need module zips the proxy refuses
# (github.com/docker/cli v29.9.2, github.com/github/go-spdx/v2 v2.8.0).
#
# Cache: $DRAINIT_CACHE, else $XDG_CACHE_HOME/drainit, else ~/.cache/drainit, keyed on the
# tool's version and the Go version (a cold goreleaser build takes a few minutes).
set -euo pipefail

case "${1:-}" in
  goreleaser) pkg=github.com/goreleaser/goreleaser/v2 version=v2.16.0 ;;
  syft) pkg=github.com/anchore/syft/cmd/syft version=v1.50.0 ;;
  actionlint) pkg=github.com/rhysd/actionlint/cmd/actionlint version=v1.7.12 ;;
  *) echo "usage: $0 goreleaser|syft|actionlint" >&2; exit 2 ;;
esac
name=$1
go=${GO:-go}
cache=${DRAINIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/drainit}
gov=$("$go" env GOVERSION)
dir="$cache/tools/$name-$version-$gov"

if [ -x "$dir/$name" ]; then
  echo "$dir/$name"
  exit 0
fi

echo "tool.sh: installing $name $version (cold: up to a few minutes)..." >&2
mkdir -p "$cache/tools"
tmp=$(mktemp -d "$cache/tools/.$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The tool's own go.mod decides its dependencies (go install pkg@version ignores ours);
# CGO_ENABLED=0 so that no C toolchain is needed.
GOBIN="$tmp" CGO_ENABLED=0 GOFLAGS= "$go" install "$pkg@$version"
# Atomic: a concurrent or interrupted install never leaves a half-written tool at $dir.
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "$dir/$name"
