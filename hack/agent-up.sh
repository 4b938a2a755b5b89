#!/usr/bin/env bash
# Runs nodelet in the background against the test cluster as node $NODE (default nodelet-0),
# logging to .cluster/agent-$NODE.log with its PID in .cluster/agent-$NODE.pid; returns once it
# serves /healthz. Its node API (kubectl logs/exec) is on $PORT (default 10250) with the test
# cluster's node serving certificate, /healthz on $HEALTHZ_PORT (default 10248). Extra flags for
# `nodelet run` can be given in NODELET_FLAGS.
set -euo pipefail
. "$(dirname "$0")/cluster-lib.sh"
NODE=${NODE:-nodelet-0}
PORT=${PORT:-10250}
HEALTHZ_PORT=${HEALTHZ_PORT:-10248}
[ -f "$CLUSTER_DIR/env" ] || { echo "agent-up: the test cluster is not up (make cluster-up)" >&2; exit 1; }
. "$CLUSTER_DIR/env"
name="agent-$NODE"
if pid=$(pid_of "$name"); then log "$name already running (pid $pid)"; exit 0; fi
[ -f "$TOP/dist/src/cli/main.js" ] || { echo "agent-up: build first (make build)" >&2; exit 1; }
# The pods' cgroups under a root of this agent's own (kubepods there), removed by agent-down once empty.
cgroup_root=/nodelet-dev/$NODE
"$TOP/deploy/cgroup-root.sh" make "$cgroup_root"
setsid "$TOP/dist/src/cli/main.js" run --cgroup-root "$cgroup_root" --node-name "$NODE" --kubeconfig "$KUBECONFIG" \
  --runtime-endpoint "$CONTAINER_RUNTIME_ENDPOINT" --pod-log-root "$NODELET_POD_LOG_ROOT" --container-logs-dir "$(dirname "$NODELET_POD_LOG_ROOT")/containers" \
  --root-dir "$CLUSTER_DIR/agents/$NODE" \
  --port "$PORT" --tls-cert-file "$NODELET_NODE_TLS_CERT" --tls-private-key-file "$NODELET_NODE_TLS_KEY" \
  --client-ca-file "$NODELET_CLIENT_CA" --healthz-port "$HEALTHZ_PORT" --log-format json ${NODELET_FLAGS:-} >>"$CLUSTER_DIR/$name.log" 2>&1 </dev/null &
echo $! >"$CLUSTER_DIR/$name.pid"
readlink -f "$(command -v node)" >"$CLUSTER_DIR/$name.exe"
for ((i = 0; i < 300; i++)); do
  if curl -sf "http://127.0.0.1:$HEALTHZ_PORT/healthz" >/dev/null 2>&1; then log "$name serving on 127.0.0.1:$PORT (healthz $HEALTHZ_PORT)"; exit 0; fi
  pid_of "$name" >/dev/null || { log "$name exited:"; tail -20 "$CLUSTER_DIR/$name.log" >&2; exit 1; }
  sleep 0.1
done
log "$name not healthy after 30 s"; tail -20 "$CLUSTER_DIR/$name.log" >&2; exit 1
