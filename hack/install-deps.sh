#!/usr/bin/env bash
# Installs what nodelet's build, tests and test cluster need, when it is missing:
# Debian packages, npm packages, and the Go-built binaries (cached by version under ~/.cache/nodelet).
#   --runtime-only: only what `make run` needs (no Go-built test binaries, no containerd).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
runtime_only=false
[ "${1:-}" = --runtime-only ] && runtime_only=true

# containerd/runc/CNI: the real runtime under test. busybox-static: the offline test images.
# gcc/libc6-dev: the process runtime's launcher (src/procruntime/launcher, C) and the test images' programs.
# proot: the process runtime's isolation where namespaces cannot be made; bsdutils' script: its exec with a tty.
# iproute2/iptables: CNI bridge plumbing.
# docker-registry (the CNCF distribution registry), apache2-utils' htpasswd and skopeo: the test
# cluster's image registries and what pushes the test images into them; zstd: zstd image layers.
# chromium: the /debug page's browser test (driven by playwright-core).
# user-mode-linux (a whole kernel as a process), bubblewrap, socat, kmod: the lab's cgroup v2 nodes (hack/lab.sh).
# Debian's etcd-server (3.4) is older than kube-apiserver 1.37 supports, so etcd is built from Go (below).
pkgs=(busybox-static gcc libc6-dev proot util-linux bsdutils coreutils curl ca-certificates tar zstd)
$runtime_only || pkgs+=(containerd runc containernetworking-plugins make bzip2 iproute2 iptables openssl docker-registry apache2-utils skopeo chromium user-mode-linux patchelf bubblewrap socat kmod)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps the packages' own services (the system containerd) from starting: the test cluster runs its own.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cd "$top"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing npm packages" >&2
  npm ci --no-audit --no-fund --loglevel=error
fi

# The control plane and tools of the test cluster, and what the reduced conformance run in
# `make test` needs: e2e.test and e2e_node.test, the ginkgo CLI, and the agnhost and nnp binaries
# of its images; and critest, for the reduced critest run.
$runtime_only || "$here/build-go-bins.sh" etcd kube-apiserver kube-scheduler kube-controller-manager kubectl crictl \
  e2e.test e2e_node.test ginkgo agnhost nnp critest
# The e2e images' busybox, built as upstream builds it.
$runtime_only || "$here/build-busybox.sh"
