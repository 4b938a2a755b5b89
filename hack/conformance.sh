#!/usr/bin/env bash
# `make conformance`: Kubernetes' [NodeConformance] specs against nodelet, nodelet with its process
# runtime and the kubelet, one agent at a time (test/conformance/README.md). Builds e2e.test, the
# ginkgo CLI and the kubelet once (cached), brings the test cluster up if it is not, then runs
# test/conformance/run.ts. AGENT, FOCUS, SPEC, PROCS and RESULTS pass through to it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/build-go-bins.sh" e2e.test ginkgo kubelet agnhost nnp
"$here/cluster-up.sh"
exec node "$(dirname "$here")/dist/test/conformance/run.js"
