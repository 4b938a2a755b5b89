#!/usr/bin/env bash
# `make run`: nodelet standalone, with no cluster and no container engine. It installs what it
# needs, builds, starts nodelet with its process runtime on the example static pods (examples/pods),
# and shows them live like `kubectl get pods -w`. Ctrl-C stops nodelet and every container it ran.
#   NODELET_RUN_DIR (default .run/) holds state and logs; NODELET_RUN_PORT (default 10255) the agent's read-only
#   port (plain HTTP on loopback: /healthz and /pods for the live view).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
cd "$top"
RUN_DIR=$(realpath -m "${NODELET_RUN_DIR:-$top/.run}")
PORT=${NODELET_RUN_PORT:-10255}
"$here/install-deps.sh" --runtime-only
"$here/build.sh"
mkdir -p "$RUN_DIR/images" "$RUN_DIR/logs" "$RUN_DIR/cni/net.d" "$RUN_DIR/cni/ipam"
# The pods' network: a private bridge of its own (no masquerade: nothing leaves the machine).
cat >"$RUN_DIR/cni/net.d/10-nodelet-run.conflist" <<CNI
{"cniVersion": "1.0.0", "name": "nodelet-run", "plugins": [
  {"type": "bridge", "bridge": "${NODELET_RUN_BRIDGE:-nodeletrun0}", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "${NODELET_RUN_POD_CIDR:-10.222.0.0/24}"}]], "dataDir": "$RUN_DIR/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI
if [ ! -f "$RUN_DIR/images/busybox_2.tar" ] || [ "$top/test/env/images/build-images.mjs" -nt "$RUN_DIR/images/busybox_2.tar" ]; then
  node test/env/images/build-images.mjs "$RUN_DIR/images" - /bin/busybox >/dev/null
fi

# The pods' cgroups: kubepods under a root of make run's own (NODELET_RUN_CGROUP_ROOT), made here in
# every hierarchy and removed at the end; never the root a kubelet of this machine may use.
export NODELET_RUN_CGROUP_ROOT=${NODELET_RUN_CGROUP_ROOT:-/nodelet-run}
"$top/deploy/cgroup-root.sh" make "$NODELET_RUN_CGROUP_ROOT"
export NODELET_RUN_NODE=${NODELET_RUN_NODE:-$(hostname | tr 'A-Z_' 'a-z-')} NODELET_RUN_DIR="$RUN_DIR" NODELET_RUN_PODS=${NODELET_RUN_PODS:-$top/examples/pods}
nodelet=("$top/dist/src/cli/main.js")
setsid "${nodelet[@]}" run --config "$top/examples/nodelet.yaml" --read-only-port "$PORT" >>"$RUN_DIR/nodelet.log" 2>&1 </dev/null &
agent=$!
echo "$agent" >"$RUN_DIR/nodelet.pid"

cleanup() {
  trap - INT TERM EXIT
  echo
  echo "stopping nodelet (pid $agent) and the pods it ran..."
  kill -TERM "$agent" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$agent" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$agent" 2>/dev/null || true
  "${nodelet[@]}" runtime reset --root "$RUN_DIR/process"
  "$top/deploy/cgroup-root.sh" remove "$NODELET_RUN_CGROUP_ROOT"
  rm -f "$RUN_DIR/nodelet.pid"
  echo "stopped; logs in $RUN_DIR/nodelet.log"
}
trap cleanup INT TERM EXIT

for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  kill -0 "$agent" 2>/dev/null || { echo "nodelet exited; last lines of $RUN_DIR/nodelet.log:" >&2; tail -20 "$RUN_DIR/nodelet.log" >&2; exit 1; }
  sleep 0.1
done
echo "nodelet runs standalone as node $NODELET_RUN_NODE (log: $RUN_DIR/nodelet.log); pods from $NODELET_RUN_PODS"
echo "live page: http://127.0.0.1:$PORT/debug    try: curl http://127.0.0.1:8080/    Ctrl-C stops everything"
echo
"${nodelet[@]}" get pods -w --server "http://127.0.0.1:$PORT"
