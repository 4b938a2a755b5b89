#!/usr/bin/env bash
# Stops the agent started by agent-up (by its PID). Its pods keep running, as with the kubelet.
set -euo pipefail
. "$(dirname "$0")/cluster-lib.sh"
NODE=${NODE:-nodelet-0}
if pid=$(pid_of "agent-$NODE"); then stop_pid "agent-$NODE" "$pid" 10; fi
rm -f "$CLUSTER_DIR/agent-$NODE.pid"
# Its pods' cgroups stay while its pods run; empty ones go.
"$TOP/deploy/cgroup-root.sh" remove "/nodelet-dev/$NODE"
