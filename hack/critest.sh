#!/usr/bin/env bash
# `make critest`: cri-tools' conformance suite (critest) against nodelet's process runtime, started
# here on a socket of its own. Prints the passed/failed/skipped counts and the failed specs.
# The images critest pulls are built offline (test/env/images/build-images.mjs --critest: busybox
# images under critest's names); what still cannot be served is listed in the README.
# Output: .cluster/critest/critest.log
set -euo pipefail
. "$(dirname "$0")/cluster-lib.sh"
"$here/build-go-bins.sh" critest
CRITEST="$BIN/critest-$CRI_TOOLS_VERSION"
out="$CLUSTER_DIR/critest"
rm -rf "$out" && mkdir -p "$out/images"
# busybox as upstream builds it (cluster-up builds it): its shell execs ls, cat... as docker's busybox
# image does (Debian's static one runs them inside the shell, where a masked /bin/ls cannot reach).
node "$TOP/test/env/images/build-images.mjs" "$out/images" - "${BUSYBOX:-$BIN/busybox-$BUSYBOX_VERSION}" --critest "$BIN/nnp-$KUBE_VERSION" >/dev/null
sock="$RUN_DIR/critest-process.sock"
# Its pods on the test cluster's bridge, addressed from the same pool as containerd's.
# The launcher, never proot: under proot a container's sethostname or bridge would be the host's.
"$TOP/dist/src/cli/main.js" runtime serve --socket "$sock" --root "$out/root" --images-dir "$out/images" --isolation launcher \
  --cni-conf-dir "$CLUSTER_DIR/cni/net.d" --log-format json >"$out/runtime.log" 2>&1 &
rt=$!
trap 'kill -TERM $rt 2>/dev/null; wait $rt 2>/dev/null; "$TOP/dist/src/cli/main.js" runtime reset --root "$out/root"' EXIT
for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
cat >"$out/images.yaml" <<YAML
defaultTestContainerImage: nodelet.test/busybox:1
webServerTestImage: registry.k8s.io/e2e-test-images/nginx:1.14-2
YAML
# Nothing is skipped by default (each pod has a network namespace of its own, so the specs that
# create a bridge in it touch nothing of the host's); CRITEST_SKIP may name some, CRITEST_FOCUS
# run only some (the reduced run in `make test`).
skip="${CRITEST_SKIP:-}"
set +e
timeout "${CRITEST_TIMEOUT:-960}" "$CRITEST" --runtime-endpoint "unix://$sock" --image-endpoint "unix://$sock" \
  --test-images-file "$out/images.yaml" --ginkgo.no-color --ginkgo.timeout 15m ${skip:+--ginkgo.skip "$skip"} ${CRITEST_FOCUS:+--ginkgo.focus "$CRITEST_FOCUS"} ${CRITEST_ARGS:-} >"$out/critest.log" 2>&1
rc=$?
set -e
summary=$(grep -E "^Ran [0-9]+ of [0-9]+ Specs" "$out/critest.log" | tail -1)
counts=$(grep -oE "[0-9]+ Passed \| [0-9]+ Failed \| [0-9]+ Pending \| [0-9]+ Skipped" "$out/critest.log" | tail -1)
echo "critest $CRI_TOOLS_VERSION against nodelet's process runtime: ${summary:-no summary} -- ${counts:-see $out/critest.log}"
grep -E "^\s*\[FAIL\]" "$out/critest.log" | sed 's/^\s*//' | sort -u || true
echo "(exit $rc; full log: $out/critest.log)"
