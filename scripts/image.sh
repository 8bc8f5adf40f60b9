#!/usr/bin/env bash
# Builds drainit's multi-arch OCI image from the Linux binaries GoReleaser left in dist/, and
# saves it as an OCI archive in dist/, without a Docker daemon: podman builds one COPY-only image
# per architecture (FROM scratch runs nothing, so no emulation is needed) into a manifest list.
#
#   scripts/image.sh DIST VERSION
#
# The image holds /drainit and /drainit-check (mode 0755, owned by root: any user may run them; no
# shell, no libc), for a user's Dockerfile to `COPY --from=drainit:VERSION /drainit /drainit`,
# and for `docker run drainit:VERSION check …`, which finds drainit-check beside drainit.
set -euo pipefail

dist=${1:?usage: $0 DIST VERSION}
version=${2:?usage: $0 DIST VERSION}
# An image tag may not hold '+'; semver build metadata becomes '-'.
tag=${version//+/-}
name="localhost/drainit:$tag"
out="$dist/drainit_${version}_image.oci.tar"

# GoReleaser's build directories are named for Go's target (amd64_v1, arm_7, ppc64le_power8, ...);
# OCI platforms want os/arch[/variant].
platform() {
  case "$1" in
    amd64_*) echo linux/amd64 ;;
    arm64_*) echo linux/arm64 ;;
    arm_7) echo linux/arm/v7 ;;
    ppc64le_*) echo linux/ppc64le ;;
    s390x*) echo linux/s390x ;;
    riscv64_*) echo linux/riscv64 ;;
    *) return 1 ;;
  esac
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ctx="$work/context"
mkdir "$ctx"
# A store of this run's own, discarded with it: the machine's podman store is neither read nor
# written (a user's own localhost/drainit:TAG stays as it was), and an interrupted build leaves no
# images behind. vfs: the two files need no overlay mounts, as root or rootless.
podman() {
  command podman --root "$work/storage" --runroot "$work/run" --tmpdir "$work/tmp" \
    --storage-driver vfs "$@"
}
printf 'FROM scratch\nCOPY drainit /drainit\nCOPY drainit-check /drainit-check\nENTRYPOINT ["/drainit"]\n' >"$ctx/Containerfile"

podman manifest create "$name" >/dev/null
# The commit's time, not the clock's, so that a rebuild of the same commit is the same image.
when=$(git log -1 --format=%ct 2>/dev/null || echo 0)
n=0
for dir in "$dist"/drainit_linux_*/; do
  target=$(basename "$dir")
  target=${target#drainit_linux_}
  plat=$(platform "$target") || { echo "image.sh: no OCI platform for $target" >&2; exit 1; }
  install -m 0755 "$dir/drainit" "$ctx/drainit"
  install -m 0755 "$dist/drainit-check_linux_$target/drainit-check" "$ctx/drainit-check"
  podman build --quiet --platform "$plat" --timestamp "$when" --manifest "$name" \
    --label org.opencontainers.image.title=drainit \
    --label org.opencontainers.image.version="$version" \
    --label org.opencontainers.image.licenses=Apache-2.0 \
    --label org.opencontainers.image.source=https://github.com/drainit/drainit \
    -f "$ctx/Containerfile" "$ctx" >/dev/null
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "image.sh: no Linux binaries in $dist" >&2; exit 1; }
rm -f "$out"
podman manifest push --all --quiet "$name" "oci-archive:$out:drainit:$tag"
echo "image.sh: $out ($n platforms, drainit:$tag)"
