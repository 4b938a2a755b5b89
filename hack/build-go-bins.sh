#!/usr/bin/env bash
# Builds the Go test dependencies (kube-apiserver, kube-scheduler, kube-controller-manager, kubectl,
# kubelet, etcd, crictl, critest; for the conformance runs e2e.test, e2e_node.test, ginkgo and the test images'
# agnhost and nnp) from their published Go modules into $NODELET_CACHE/bin/<name>-<version>, once per
# version.
# Usage: hack/build-go-bins.sh [name...]   (default: what `make test` needs)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"
bindir="$NODELET_CACHE/bin"
mkdir -p "$bindir"
export GOFLAGS=-mod=mod CGO_ENABLED=0

kube_ldflags() {
  local v=${KUBE_VERSION#v} major minor
  major=${v%%.*}; minor=${v#*.}; minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  echo "-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
}

build() { # name version moddir package [extra go build args...]
  local name=$1 version=$2 moddir=$3 pkg=$4; shift 4
  local out="$bindir/$name-$version"
  [ -x "$out" ] && return 0
  echo "building $name $version (cached afterwards in $bindir)" >&2
  local start=$SECONDS
  (cd "$here/gomod/$moddir" && go build -trimpath "$@" -o "$out.tmp" "$pkg")
  mv "$out.tmp" "$out"
  echo "built $name in $((SECONDS - start)) s" >&2
}

build_critest() {
  local out="$bindir/critest-$CRI_TOOLS_VERSION"
  [ -x "$out" ] && return 0
  echo "building critest $CRI_TOOLS_VERSION" >&2
  # critest is a ginkgo suite, compiled as a test binary.
  (cd "$here/gomod/critools" && go test -c -trimpath -ldflags "-s -w" -o "$out.tmp" sigs.k8s.io/cri-tools/cmd/critest)
  mv "$out.tmp" "$out"
}

# Kubernetes' e2e suites, compiled as test binaries as upstream ships them (go test -c): e2e.test
# (test/e2e) and e2e_node.test (test/e2e_node, the kubelet's node e2e suite; it holds test/e2e/common too).
build_suite() { # name package
  local name=$1 pkg=$2
  local out="$bindir/$name-$KUBE_VERSION"
  [ -x "$out" ] && return 0
  echo "building $name $KUBE_VERSION (cached afterwards in $bindir)" >&2
  local start=$SECONDS
  (cd "$here/gomod/k8s" && go test -c -trimpath -ldflags "$(kube_ldflags)" -o "$out.tmp" "$pkg")
  mv "$out.tmp" "$out"
  echo "built $name in $((SECONDS - start)) s" >&2
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl)
for t in "${targets[@]}"; do
  case $t in
    kube-apiserver|kube-scheduler|kube-controller-manager|kubectl|kubelet) build "$t" "$KUBE_VERSION" k8s "k8s.io/kubernetes/cmd/$t" -ldflags "$(kube_ldflags)" ;;
    e2e.test) build_suite e2e.test k8s.io/kubernetes/test/e2e ;;
    e2e_node.test) build_suite e2e_node.test k8s.io/kubernetes/test/e2e_node ;;
    # The e2e suite's image binaries: agnhost (its version is the image's tag) and nonewprivs' nnp.
    agnhost) build agnhost "$AGNHOST_VERSION" k8s k8s.io/kubernetes/test/images/agnhost -ldflags "-s -w" ;;
    nnp) build nnp "$KUBE_VERSION" k8s k8s.io/kubernetes/test/images/nonewprivs -ldflags "-s -w" ;;
    # The ginkgo CLI runs e2e.test in parallel processes; it is the version e2e.test was built with.
    ginkgo) build ginkgo "$KUBE_VERSION" k8s github.com/onsi/ginkgo/v2/ginkgo -ldflags "-s -w" ;;
    etcd) build etcd "$ETCD_VERSION" etcd go.etcd.io/etcd/server/v3 -ldflags "-s -w" ;;
    crictl) build crictl "$CRI_TOOLS_VERSION" critools sigs.k8s.io/cri-tools/cmd/crictl -ldflags "-s -w" ;;
    critest) build_critest ;;
    *) echo "build-go-bins: unknown target $t" >&2; exit 2 ;;
  esac
done
