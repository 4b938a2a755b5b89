# Shared paths and helpers of the test cluster scripts (sourced).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(dirname "$here")
. "$here/versions.sh"
CLUSTER_DIR="$TOP/.cluster"
BIN="$NODELET_CACHE/bin"
ETCD_BIN="$BIN/etcd-$ETCD_VERSION"
APISERVER_BIN="$BIN/kube-apiserver-$KUBE_VERSION"
SCHEDULER_BIN="$BIN/kube-scheduler-$KUBE_VERSION"
CONTROLLER_MANAGER_BIN="$BIN/kube-controller-manager-$KUBE_VERSION"
KUBECTL_BIN="$BIN/kubectl-$KUBE_VERSION"
CRICTL_BIN="$BIN/crictl-$CRI_TOOLS_VERSION"
ETCD_PORT=${NODELET_ETCD_PORT:-23790}
ETCD_PEER_PORT=${NODELET_ETCD_PEER_PORT:-23800}
APISERVER_PORT=${NODELET_APISERVER_PORT:-26443}
# A second API server on the same etcd for the kubelet's node e2e suite (make conformance
# SUITE=node-e2e), to which this machine's name resolves to NODE_API_NETNS_IP: the node proxy
# refuses loopback, so that suite's node is reached there, in a network namespace of the test's own.
NODE_E2E_APISERVER_PORT=${NODELET_NODE_E2E_APISERVER_PORT:-26444}
NODE_API_NETNS_IP=10.253.0.2
SCHEDULER_PORT=${NODELET_SCHEDULER_PORT:-26259}
CONTROLLER_MANAGER_PORT=${NODELET_CONTROLLER_MANAGER_PORT:-26257}
# The image registries: one with htpasswd authentication (private images), one anonymous.
REGISTRY_PORT=${NODELET_REGISTRY_PORT:-25000}
PUBLIC_REGISTRY_PORT=${NODELET_PUBLIC_REGISTRY_PORT:-25001}
POD_CIDR=${NODELET_POD_CIDR:-10.217.0.0/16}
SERVICE_CIDR=10.96.0.0/16
BRIDGE=${NODELET_BRIDGE:-nodelet0}
# unix socket paths are limited to 107 bytes; a deep checkout gets its sockets under /tmp instead.
if [ ${#CLUSTER_DIR} -le 60 ]; then
  RUN_DIR="$CLUSTER_DIR/run"
else
  RUN_DIR="/tmp/nodelet-run-$(printf '%s' "$CLUSTER_DIR" | sha256sum | cut -c1-12)"
fi
CONTAINERD_SOCK="$RUN_DIR/containerd.sock"

log() { printf '[cluster] %s\n' "$*" >&2; }

# pid_of NAME: prints the PID recorded for a component if that process is still the one we started
# (recorded in PID_DIR, the cluster's directory unless a script sets it: the lab's are its own).
pid_of() {
  local dir=${PID_DIR:-$CLUSTER_DIR} f pid
  f="$dir/$1.pid"
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  # A recycled PID belongs to another program: compare the executable we recorded.
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(cat "$dir/$1.exe" 2>/dev/null)" ] || return 1
  echo "$pid"
}

# stop_pid NAME PID [SECONDS]: SIGTERM, then SIGKILL after the grace period.
stop_pid() {
  local name=$1 pid=$2 grace=${3:-15} i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < grace * 10; i++)); do
    [ -d "/proc/$pid" ] || { log "stopped $name (pid $pid)"; return 0; }
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && { log "stopped $name (pid $pid)"; return 0; }
    sleep 0.1
  done
  log "$name (pid $pid) ignored SIGTERM for ${grace}s: killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

# service_account_keys_and_admin_token PKI: the API server's service-account signing key pair and
# an admin token (tokens.csv for --token-auth-file, admin-token for the kubeconfigs).
service_account_keys_and_admin_token() {
  local pki=$1 token
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  token=$(openssl rand -hex 24)
  echo "$token,admin,nodelet-admin,system:masters" >"$pki/tokens.csv"
  echo "$token" >"$pki/admin-token"
  chmod 600 "$pki"/*.key "$pki/tokens.csv" "$pki/admin-token"
}
