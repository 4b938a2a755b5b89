#!/usr/bin/env bash
# `make conformance`: Kubernetes' [NodeConformance] specs against nodelet, nodelet with its process
# runtime and the kubelet, one agent at a time (test/conformance/README.md): the suites of
# test/e2e/common (e2e.test) and of the kubelet's node e2e suite (e2e_node.test). Builds the test
# binaries, the ginkgo CLI and the kubelet once (cached), brings the test cluster up if it is not
# (with the node e2e suite's API server), then runs test/conformance/run.ts. SUITE, AGENT, FOCUS,
# SPEC, PROCS and RESULTS pass through to it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/build-go-bins.sh" e2e.test e2e_node.test ginkgo kubelet agnhost nnp
NODELET_NODE_E2E_APISERVER=1 "$here/cluster-up.sh"
exec node "$(dirname "$here")/dist/test/conformance/run.js"
