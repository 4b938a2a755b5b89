#!/usr/bin/env bash
# Builds busybox $BUSYBOX_VERSION as upstream's defconfig makes it (static) into
# $NODELET_CACHE/bin/busybox-$BUSYBOX_VERSION, once, from its release tarball as Debian's archive
# carries it (the .orig.tar.bz2 of Debian's source package, checksum pinned in versions.sh).
# The e2e suite's images run it: the upstream busybox image is this build, and Debian's own busybox
# differs where the specs look: its ash drops environment variables whose names are not shell
# names (a ConfigMap key "data-1" as an env var), which upstream's passes on to the programs it runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"
out="$NODELET_CACHE/bin/busybox-$BUSYBOX_VERSION"
[ -x "$out" ] && exit 0
mkdir -p "$NODELET_CACHE/bin" "$NODELET_CACHE/src"
tarball="$NODELET_CACHE/src/busybox_$BUSYBOX_VERSION.orig.tar.bz2"
url="http://deb.debian.org/debian/pool/main/b/busybox/busybox_$BUSYBOX_VERSION.orig.tar.bz2"
if ! echo "$BUSYBOX_SHA256  $tarball" | sha256sum -c --status 2>/dev/null; then
  echo "downloading $url" >&2
  curl -fsSL -o "$tarball.tmp" "$url" || { echo "build-busybox: cannot download $url" >&2; exit 1; }
  echo "$BUSYBOX_SHA256  $tarball.tmp" | sha256sum -c --status || { echo "build-busybox: $url does not have the pinned checksum $BUSYBOX_SHA256" >&2; exit 1; }
  mv "$tarball.tmp" "$tarball"
fi
echo "building busybox $BUSYBOX_VERSION (cached afterwards in $NODELET_CACHE/bin)" >&2
start=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xjf "$tarball" -C "$work"
cd "$work/busybox-$BUSYBOX_VERSION"
make defconfig >/dev/null
sed -i 's/^# CONFIG_STATIC is not set$/CONFIG_STATIC=y/' .config
make -j"$(nproc)" busybox >/dev/null 2>"$work/build.log" || { tail -20 "$work/build.log" >&2; exit 1; }
cp busybox "$out.tmp" && mv "$out.tmp" "$out"
echo "built busybox in $((SECONDS - start)) s" >&2
