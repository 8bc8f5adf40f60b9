#!/usr/bin/env bash
# `make release`: every release artifact in dist/, as a tagged release would have them, without
# publishing or signing anything (GoReleaser's snapshot mode; .goreleaser.yaml says what is built).
# Then the bare binaries under their release names beside the archives, and the multi-arch OCI
# image as an archive (scripts/image.sh).
#
# Needs Go, git and podman; goreleaser and syft are the pinned ones from scripts/tool.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

goreleaser=$(./scripts/tool.sh goreleaser)
syft=$(./scripts/tool.sh syft)

# The version a snapshot is named after: the last tag, or with none yet the newest release in
# CHANGELOG.md, or before the first release v0.0.0 (0.0.0-snapshot.COMMIT: no release it could be
# taken for).
tag=$(git describe --tags --abbrev=0 2>/dev/null ||
  sed -n 's/^## \[\([0-9][0-9.]*\)\].*/v\1/p' CHANGELOG.md | head -n1)
tag=${tag:-v0.0.0}
# GoReleaser reads the git remote's URL and, in a checkout with no remote (a fresh `git init`, a
# copied tree), silently names the snapshot after commit "none": give it the project's URL then.
gitenv=()
if ! git ls-remote --get-url >/dev/null 2>&1; then
  gitenv=(GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url
    GIT_CONFIG_VALUE_0=https://github.com/drainit/drainit)
fi
env "${gitenv[@]}" PATH="$(dirname "$syft"):$PATH" GORELEASER_CURRENT_TAG="$tag" \
  "$goreleaser" release --snapshot --clean --skip=sign,publish

version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' dist/metadata.json)
[ -n "$version" ] || { echo "release.sh: no version in dist/metadata.json" >&2; exit 1; }

# GoReleaser keeps a bare binary in its build directory and gives it its release name only when
# it uploads it; link each one under that name, so that dist/ holds what checksums.txt lists.
for cmd in drainit drainit-check; do
  for bin in dist/"$cmd"_*_*/"$cmd" dist/"$cmd"_*_*/"$cmd".exe; do
    [ -e "$bin" ] || continue
    dir=$(basename "$(dirname "$bin")") # drainit_linux_arm_7, drainit-check_linux_amd64_v1, ...
    os=$(echo "$dir" | cut -d_ -f2)
    arch=$(echo "$dir" | cut -d_ -f3)
    level=$(echo "$dir" | cut -d_ -f4)
    [ "$arch" = arm ] && arch="armv$level"
    ext=${bin##*/"$cmd"}
    ln -f "$bin" "dist/${cmd}_${version}_${os}_${arch}${ext}"
  done
done
(cd dist && sha256sum --check --quiet checksums.txt)

./scripts/image.sh dist "$version"
echo "release.sh: dist/ holds drainit $version"
