#!/usr/bin/env bash
# `make image`: nodelet's OCI image for the DaemonSet, built without a container engine from this
# checkout's dist/ (make build) and the machine's Debian packages and Node.js, reproducibly
# (hack/image/build-image.mjs says how). Writes dist/image/nodelet_<tag>.tar and its .json.
#   hack/build-image.sh [--name NAME] [--tag TAG] [--out DIR] [--source URL]
# Import it with `ctr -n k8s.io images import dist/image/nodelet_<tag>.tar`, or push it with
# `skopeo copy oci-archive:dist/image/nodelet_<tag>.tar docker://REGISTRY/nodelet:<tag>`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# What the image is made of must be on this machine (hack/install-deps.sh installs it all).
missing=()
for p in containernetworking-plugins iptables zstd tar dash coreutils util-linux mount bsdutils hostname grep ca-certificates gzip libc-bin; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "build-image: Debian packages missing: ${missing[*]} (apt-get install ${missing[*]}, or make setup)" >&2
  exit 1
fi
[ -x /usr/bin/node ] || { echo "build-image: /usr/bin/node (Node.js 20) is missing" >&2; exit 1; }
exec /usr/bin/node "$here/image/build-image.mjs" "$@"
