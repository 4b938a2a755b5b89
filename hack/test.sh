#!/usr/bin/env bash
# `make test`: installs and builds what is missing, starts the test cluster, runs the unit and the
# integration tests in one run (one summary), and always stops the cluster at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$here")"
"$here/install-deps.sh"
"$here/build.sh"
trap '"$here/cluster-down.sh"' EXIT
"$here/cluster-up.sh"
# Integration tests share one containerd and one API server: files run one at a time.
node --test --test-concurrency=1 --test-reporter=spec dist/test/unit dist/test/integration
