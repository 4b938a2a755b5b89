#!/usr/bin/env bash
# The lab: disposable cgroup v2 nodes in user-mode Linux, several at once, in a cluster of their own.
#   hack/lab.sh up                  (make lab) LAB_NODES, LAB_AGENTS, LAB_NODE_MEMORY; idempotent
#   hack/lab.sh down                (make lab-down) stops everything the lab started
#   hack/lab.sh exec NODE -- CMD... runs CMD as root in NODE: its output, its exit code
#   hack/lab.sh kill NODE           stops NODE at once, as a power cut
#   hack/lab.sh status              what runs
# Everything the lab runs lives in a network namespace it makes (NODELET_LAB_NETNS, nodelet-lab):
# the control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) and one
# user-mode Linux kernel per node, each on a tap of the namespace's bridge. Nothing is routed out of
# it; the host reaches the API server through a unix socket at 127.0.0.1:LAB_API_PORT only.
set -euo pipefail
. "$(dirname "$0")/cluster-lib.sh"
# NODELET_LAB_DIR, NODELET_LAB_NETNS and LAB_API_PORT let a second lab run beside one (make test's lane).
LAB_DIR=${NODELET_LAB_DIR:-$TOP/.lab}
PID_DIR="$LAB_DIR/run"
# unix socket paths are limited to 107 bytes: a deep checkout's door to the API server is under /tmp.
API_SOCK="$PID_DIR/apiserver.sock"
[ ${#API_SOCK} -le 100 ] || API_SOCK="/tmp/nodelet-lab-$(printf '%s' "$LAB_DIR" | sha256sum | cut -c1-12).sock"
NETNS=${NODELET_LAB_NETNS:-nodelet-lab}
LAB_NODES=${LAB_NODES:-2}
LAB_AGENTS=${LAB_AGENTS:-nodelet-containerd,nodelet-process,kubelet}
LAB_NODE_MEMORY=${LAB_NODE_MEMORY:-2G}
LAB_API_PORT=${LAB_API_PORT:-36443}
# A node's PID ceiling (kernel.pid_max in it): each of the guest's address spaces is a host process
# too, so the nodes' ceilings together stay within half of the host's (require lowers them).
LAB_PID_MAX=${LAB_PID_MAX:-4096}
# Addresses, all inside the lab's namespace: the bridge (and control plane) .1, node N .(10+N), its pods 10.251.N.0/24.
LAB_NET=10.250.0 LAB_PREFIX=24 GATEWAY=10.250.0.1 LAB_POD_NET=10.251 LAB_SERVICE_CIDR=10.97.0.0/16
BRIDGE_DEV=labbr0 EXEC_PORT=10022 API_PORT=6443
KUBELET_BIN="$BIN/kubelet-$KUBE_VERSION"
# The kernel the nodes boot and its modules: Debian's, or a newer one where Debian's cannot run
# on this CPU (hack/lab/uml.sh); found when first needed.
UML= UML_MODULES=
find_uml() { [ -n "$UML" ] || read -r UML UML_MODULES < <("$TOP/hack/lab/uml.sh") || die "no user-mode Linux runs here"; }

log() { printf '[lab] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
in_ns() { ip netns exec "$NETNS" "$@"; }
node_ip() { echo "$LAB_NET.$((10 + $1))"; }
node_name() { echo "lab-$1"; }
node_index() { [[ $1 =~ ^lab-([0-9]+)$ ]] || die "no such node: $1 (lab nodes are lab-1, lab-2, ...)"; echo "${BASH_REMATCH[1]}"; }
# The agent of node N: the Nth of LAB_AGENTS, the list repeated as needed.
node_agent() { local a; IFS=, read -ra a <<<"$LAB_AGENTS"; echo "${a[$((($1 - 1) % ${#a[@]}))]}"; }
nodes_running() { local f; for f in "$PID_DIR"/node-lab-*.pid; do [ -e "$f" ] && basename "$f" .pid | sed 's/^node-//'; done; }

# start NAME NETNS|- BINARY ARGS...: runs a component in its own session (in the lab's namespace
# unless '-'), logging to .lab/logs/NAME.log, its PID and executable recorded for pid_of.
start() {
  local name=$1 ns=$2 bin=$3; shift 3
  if pid=$(pid_of "$name"); then log "$name already running (pid $pid)"; return 0; fi
  if [ "$ns" = - ]; then setsid "$bin" "$@" >>"$LAB_DIR/logs/$name.log" 2>&1 </dev/null &
  else setsid ip netns exec "$ns" "$bin" "$@" >>"$LAB_DIR/logs/$name.log" 2>&1 </dev/null &
  fi
  echo $! >"$PID_DIR/$name.pid"
  readlink -f "$bin" >"$PID_DIR/$name.exe"
}

# wait_for WHAT SECONDS COMMAND...
wait_for() {
  local what=$1 secs=$2 i; shift 2
  for ((i = 0; i < secs * 10; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  die "$what not ready after ${secs}s (logs in .lab/logs/)"
}

# cert NAME SUBJECT SANS EKU: a key and a certificate issued by the lab's CA, once.
cert() {
  local pki=$LAB_DIR/pki name=$1
  [ -f "$pki/$name.crt" ] && return 0
  openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$pki/$name.key" -out "$pki/$name.csr" 2>/dev/null
  { [ -n "$3" ] && echo "subjectAltName=$3"; echo "extendedKeyUsage=$4"; } >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 3650 \
    -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  chmod 600 "$pki/$name.key"
}

# kubeconfig FILE SERVER USER-LINES: a kubeconfig for the lab's cluster.
kubeconfig() {
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "$2", certificate-authority: "$LAB_DIR/pki/ca.crt"}
users:
- name: user
  user:
$3
contexts:
- name: lab
  context: {cluster: lab, user: user}
current-context: lab
KC
  chmod 600 "$1"
}

require() {
  find_uml
  for b in "$ETCD_BIN" "$APISERVER_BIN" "$SCHEDULER_BIN" "$CONTROLLER_MANAGER_BIN" "$KUBECTL_BIN"; do
    [ -x "$b" ] || die "$b is missing: run 'make setup'"
  done
  [ -f "$TOP/dist/src/cli/main.js" ] || die "dist/ is missing: run 'make build'"
  [[ $LAB_NODES =~ ^[1-9][0-9]?$ ]] && [ "$LAB_NODES" -le 20 ] || die "LAB_NODES=$LAB_NODES: a number from 1 to 20"
  local a
  IFS=, read -ra a <<<"$LAB_AGENTS"
  for x in "${a[@]}"; do
    case $x in nodelet-containerd | nodelet-process | kubelet) ;; *) die "LAB_AGENTS: unknown agent '$x' (nodelet-containerd, nodelet-process, kubelet)" ;; esac
  done
  [[ $LAB_PID_MAX =~ ^[0-9]+$ ]] || die "LAB_PID_MAX=$LAB_PID_MAX: a number"
  local host_pid_max budget
  host_pid_max=$(cat /proc/sys/kernel/pid_max) budget=$((host_pid_max / 2))
  if ((LAB_NODES * LAB_PID_MAX > budget)); then
    LAB_PID_MAX=$((budget / LAB_NODES))
    log "each node's PID ceiling lowered to $LAB_PID_MAX: $LAB_NODES nodes may hold half the host's pid_max"
  fi
  ((LAB_PID_MAX >= 512)) || die "a node needs a PID ceiling of 512 at least: fewer nodes (the host's pid_max is $host_pid_max)"
  [[ $LAB_NODE_MEMORY =~ ^[0-9]+[MG]$ ]] || die "LAB_NODE_MEMORY=$LAB_NODE_MEMORY: a size such as 2G or 1536M"
  # Only the nodes that run the kubelet need it (built once, cached).
  local i
  for ((i = 1; i <= LAB_NODES; i++)); do
    if [ "$(node_agent "$i")" = kubelet ]; then "$here/build-go-bins.sh" kubelet; break; fi
  done
}

up_network() {
  if ! ip netns list | grep -qw "^$NETNS"; then
    log "network namespace $NETNS: bridge $BRIDGE_DEV $GATEWAY/$LAB_PREFIX"
    mountpoint -q /run/netns || touch "$LAB_DIR/netns-mount"
    ip netns add "$NETNS"
  fi
  in_ns ip link set lo up
  in_ns ip link show "$BRIDGE_DEV" >/dev/null 2>&1 || {
    in_ns ip link add "$BRIDGE_DEV" type bridge
    in_ns ip addr add "$GATEWAY/$LAB_PREFIX" dev "$BRIDGE_DEV"
    in_ns ip link set "$BRIDGE_DEV" up
  }
  # The control plane reaches pods by their IPs (the API server's proxy): each node routes its own CIDR.
  in_ns sysctl -qw net.ipv4.ip_forward=1
}

up_pki() {
  local pki=$LAB_DIR/pki
  mkdir -p "$pki"
  if [ ! -f "$pki/ca.crt" ]; then
    log "the lab's CA, the API server's certificates, service-account keys and admin token"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=nodelet-lab-ca" -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
    service_account_keys_and_admin_token "$pki"
  fi
  cert apiserver /CN=kube-apiserver "IP:127.0.0.1,IP:$GATEWAY,IP:${LAB_SERVICE_CIDR%.0.0/16}.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" serverAuth
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "" clientAuth
  [ -f "$LAB_DIR/exec-token" ] || { openssl rand -hex 24 >"$LAB_DIR/exec-token"; chmod 600 "$LAB_DIR/exec-token"; }
}

up_control_plane() {
  local pki=$LAB_DIR/pki token
  token=$(cat "$pki/admin-token")
  start etcd "$NETNS" "$ETCD_BIN" --name lab --data-dir "$LAB_DIR/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster lab=http://127.0.0.1:2380 --listen-metrics-urls "" --log-level warn
  wait_for etcd 30 in_ns curl -sf http://127.0.0.1:2379/health
  start kube-apiserver "$NETNS" "$APISERVER_BIN" --etcd-servers http://127.0.0.1:2379 \
    --bind-address 0.0.0.0 --advertise-address "$GATEWAY" --secure-port "$API_PORT" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP,Hostname \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --api-audiences https://kubernetes.default.svc.cluster.local --service-cluster-ip-range "$LAB_SERVICE_CIDR" \
    --allow-privileged=true --endpoint-reconciler-type none --profiling=false --cert-dir "$pki" --v 1
  # The host's door to the API server: a unix socket the namespace's side serves, and a loopback port for it.
  pid_of api-door-ns >/dev/null || rm -f "$API_SOCK"
  start api-door-ns "$NETNS" "$(command -v socat)" "UNIX-LISTEN:$API_SOCK,fork,mode=600" "TCP:127.0.0.1:$API_PORT"
  start api-door-host - "$(command -v socat)" "TCP-LISTEN:$LAB_API_PORT,bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$API_SOCK"
  kubeconfig "$LAB_DIR/admin.kubeconfig" "https://127.0.0.1:$API_PORT" "    token: $token"
  kubeconfig "$LAB_DIR/kubeconfig" "https://127.0.0.1:$LAB_API_PORT" "    token: $token"
  # The same from inside a node: what the agents the integration suites start in a node use.
  kubeconfig "$LAB_DIR/in-node.kubeconfig" "https://$GATEWAY:$API_PORT" "    token: $token"
  wait_for kube-apiserver 90 in_ns curl -sf --cacert "$pki/ca.crt" -H "Authorization: Bearer $token" "https://127.0.0.1:$API_PORT/readyz"
  local controllers=namespace-controller,garbage-collector-controller,node-lifecycle-controller,taint-eviction-controller
  controllers+=,pod-garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller
  controllers+=,root-ca-certificate-publisher-controller,replicaset-controller,deployment-controller
  controllers+=,daemonset-controller,job-controller,endpoints-controller,endpointslice-controller
  local kc=$LAB_DIR/admin.kubeconfig
  start kube-scheduler "$NETNS" "$SCHEDULER_BIN" --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 10259 --v 1
  start kube-controller-manager "$NETNS" "$CONTROLLER_MANAGER_BIN" --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 10257 --controllers "$controllers" --use-service-account-credentials=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --v 1
}

up_images() {
  local images=$LAB_DIR/images
  mkdir -p "$images"
  if [ ! -f "$images/images.txt" ] || [ "$TOP/test/env/images/build-images.mjs" -nt "$images/images.txt" ]; then
    log "test images (pause, busybox, the attack suite's hostile ones)"
    gcc -static -O2 -o "$images/pause" "$TOP/test/env/images/pause.c"
    node "$TOP/test/env/images/build-images.mjs" "$images" "$images/pause" /bin/busybox --hostile >/dev/null
  fi
}

# The files node N reads at boot: node.env, its kubeconfig (a client certificate of its own), its
# serving certificate, its agent's configuration.
node_files() {
  local i=$1 name ip agent dir j peers="" hosts=""
  name=$(node_name "$i") ip=$(node_ip "$i") agent=$(node_agent "$i") dir=$LAB_DIR/nodes/$name
  rm -rf "$dir" && mkdir -p "$dir/log" "$dir/uml"
  for ((j = 1; j <= LAB_NODES; j++)); do
    hosts+="$(node_ip "$j") $(node_name "$j")"$'\n'
    [ "$j" = "$i" ] || peers+="$LAB_POD_NET.$j.0/24=$(node_ip "$j") "
  done
  cert "node-$name" "/O=system:nodes/CN=system:node:$name" "" clientAuth
  cert "serving-$name" "/O=system:nodes/CN=system:node:$name" "IP:$ip,DNS:$name" serverAuth
  kubeconfig "$dir/kubeconfig" "https://$GATEWAY:$API_PORT" "    client-certificate: $LAB_DIR/pki/node-$name.crt
    client-key: $LAB_DIR/pki/node-$name.key"
  cat >"$dir/node.env" <<ENV
LAB_NODE=$name
LAB_DIR='$LAB_DIR'
NODE_DIR='$dir'
NODE_IP=$ip
LAB_PREFIX=$LAB_PREFIX
GATEWAY=$GATEWAY
POD_CIDR=$LAB_POD_NET.$i.0/24
PEERS='$peers'
HOSTS='${hosts%$'\n'}'
AGENT=$agent
EXEC_PORT=$EXEC_PORT
PID_MAX=$LAB_PID_MAX
CPU_MHZ=$(awk -F': ' '/^cpu MHz/ {print $2; exit}' /proc/cpuinfo | grep . || echo 2000.000)
MACHINE_ID=$(printf '%s' "$name$(cat "$LAB_DIR/exec-token")" | md5sum | cut -c1-32)
PAUSE_IMAGE=nodelet.test/pause:1
KUBELET_BIN='$KUBELET_BIN'
ENV
  local ca=$LAB_DIR/pki/ca.crt crt=$LAB_DIR/pki/serving-$name.crt key=$LAB_DIR/pki/serving-$name.key
  case $agent in
    kubelet)
      cat >"$dir/agent.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The kubelet's own defaults (cgroup v2: no failCgroupV1 needed), but for what the node is given.
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: cgroupfs
podCIDR: $LAB_POD_NET.$i.0/24
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: $ca}}
authorization: {mode: Webhook}
tlsCertFile: $crt
tlsPrivateKeyFile: $key
YAML
      ;;
    nodelet-*)
      {
        cat <<YAML
apiVersion: nodelet.io/v1alpha1
kind: NodeletConfiguration
nodeName: $name
kubeconfig: $dir/kubeconfig
nodeIP: $ip
address: 0.0.0.0
port: 10250
tlsCertFile: $crt
tlsPrivateKeyFile: $key
authentication: {x509: {clientCAFile: $ca}}
rootDir: /var/lib/nodelet
podLogRoot: /var/log/pods
logFormat: json
YAML
        if [ "$agent" = nodelet-process ]; then
          printf 'runtime: process\nprocessRuntime:\n  root: /var/lib/nodelet/process\n  imagesDir: %s\n  socket: /run/nodelet/process.sock\n  cniConfDir: /etc/cni/net.d\n' "$LAB_DIR/images"
        else
          echo 'runtimeEndpoint: unix:///run/containerd/containerd.sock'
        fi
      } >"$dir/agent.yaml"
      ;;
  esac
}

# Boots node N: its tap on the bridge, then its kernel, in a mount namespace where the host's root
# is read-only (submounts too) and only the node's scratch directory is writable, with a /dev of a
# few character devices (the tap's /dev/net/tun among them) and a PID namespace of its own (its
# kernel's end ends every process it made).
boot_node() {
  local i=$1 name tap dir
  name=$(node_name "$i") tap=labtap$i dir=$LAB_DIR/nodes/$name
  if pid_of "node-$name" >/dev/null; then log "$name already running"; return 0; fi
  node_files "$i"
  # Its console (the kernel's messages, the boot's) is .lab/logs/node-NAME.log; the services' logs are in its scratch directory.
  : >"$LAB_DIR/logs/node-$name.log"
  in_ns ip link del "$tap" 2>/dev/null || true
  in_ns ip tuntap add dev "$tap" mode tap
  in_ns ip link set "$tap" master "$BRIDGE_DEV" up
  in_ns ip route replace "$LAB_POD_NET.$i.0/24" via "$(node_ip "$i")"
  find_uml
  start "node-$name" "$NETNS" "$(command -v bwrap)" --ro-bind / / --dev /dev --dev-bind /dev/net/tun /dev/net/tun \
    --proc /proc --tmpfs /tmp --bind "$dir" "$dir" --unshare-pid --setenv TMPDIR /tmp \
    "$UML" mem="$LAB_NODE_MEMORY" root=/dev/root rootfstype=hostfs hostfs=/ ro init="$TOP/hack/lab/guest-init.sh" \
    con=null con0=fd:0,fd:1 uml_dir="$dir/uml" umid="$name" "vec0:transport=tap,ifname=$tap" \
    LAB_TOP="$TOP" LAB_NODE_DIR="$dir" LAB_UML_MODULES="$UML_MODULES"
  date +%s.%N >"$PID_DIR/node-$name.booted"
}

cmd_up() {
  require
  mkdir -p "$LAB_DIR"/{logs,run,nodes}
  local started=$SECONDS i
  up_network
  up_pki
  up_images
  up_control_plane
  for ((i = 1; i <= LAB_NODES; i++)); do boot_node "$i"; done
  wait_for kube-scheduler 60 in_ns curl -sfk https://127.0.0.1:10259/healthz
  wait_for kube-controller-manager 60 in_ns curl -sfk https://127.0.0.1:10257/healthz
  log "waiting for $LAB_NODES nodes to be Ready"
  local kc=(--kubeconfig "$LAB_DIR/kubeconfig") waiting=() ready name deadline=$((SECONDS + 180)) booted
  for ((i = 1; i <= LAB_NODES; i++)); do waiting+=("$(node_name "$i")"); done
  # One look at all nodes a round; each is reported as it turns Ready, with the time since its
  # kernel started (the README's "boot to Ready").
  while [ ${#waiting[@]} -gt 0 ]; do
    ((SECONDS < deadline)) || die "nodes ${waiting[*]} not Ready after 180 s (consoles .lab/logs/node-NAME.log, agents' logs .lab/nodes/NAME/log/)"
    ready=$("$KUBECTL_BIN" "${kc[@]}" get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | awk '$2 == "True" {print $1}')
    local still=()
    for name in "${waiting[@]}"; do
      if grep -qx "$name" <<<"$ready"; then
        booted=$(cat "$PID_DIR/node-$name.booted" 2>/dev/null || date +%s.%N)
        log "$name ($(node_agent "$(node_index "$name")")) Ready $(awk -v a="$booted" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after its boot"
      else still+=("$name"); fi
    done
    waiting=("${still[@]}")
    [ ${#waiting[@]} -eq 0 ] || sleep 0.1
  done
  log "lab up in $((SECONDS - started)) s: $LAB_NODES nodes; kubectl --kubeconfig .lab/kubeconfig get nodes"
  "$KUBECTL_BIN" "${kc[@]}" get nodes -o wide >&2
}

cmd_kill() {
  local name=$1 pid
  node_index "$name" >/dev/null
  pid=$(pid_of "node-$name") || die "$name is not running"
  # The whole session: bwrap, the kernel and its helper processes.
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"
  for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  rm -f "$PID_DIR/node-$name.pid"
  in_ns ip link del "labtap$(node_index "$name")" 2>/dev/null || true
  log "killed $name"
}

cmd_down() {
  local started=$SECONDS n pid
  for n in $(nodes_running); do
    if pid_of "node-$n" >/dev/null; then cmd_kill "$n"; else rm -f "$PID_DIR/node-$n.pid"; fi
  done
  # The lab keeps nothing: its control plane gets a short grace, all at once.
  for n in api-door-host api-door-ns kube-controller-manager kube-scheduler kube-apiserver etcd; do
    if pid=$(pid_of "$n"); then stop_pid "$n" "$pid" 3 & fi
  done
  wait
  for n in api-door-host api-door-ns kube-controller-manager kube-scheduler kube-apiserver etcd; do
    for _ in $(seq 1 50); do pid_of "$n" >/dev/null || break; sleep 0.1; done
    rm -f "$PID_DIR/$n.pid" "$PID_DIR/$n.exe"
  done
  # Anything still in the namespace was the lab's.
  if ip netns list | grep -qw "^$NETNS"; then
    for pid in $(ip netns pids "$NETNS" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$NETNS"
  fi
  # `ip netns add` made /run/netns a mount point if it was not one: the lab's to undo, once empty.
  if [ -f "$LAB_DIR/netns-mount" ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    umount /run/netns 2>/dev/null || true
  fi
  rm -f "$LAB_DIR/netns-mount"
  # The nodes' logs stay (.lab/nodes/NAME/log, .lab/logs) until the next make lab.
  rm -rf "$LAB_DIR/etcd" "$LAB_DIR"/nodes/*/uml "$PID_DIR" "$API_SOCK"
  log "lab down in $((SECONDS - started)) s"
}

cmd_exec() {
  local name=$1 i; shift
  [ "${1:-}" = -- ] && shift
  [ $# -gt 0 ] || die "usage: hack/lab.sh exec NODE -- CMD [ARG...]"
  i=$(node_index "$name")
  pid_of "node-$name" >/dev/null || die "$name is not running"
  exec ip netns exec "$NETNS" node "$TOP/hack/lab/exec-client.mjs" "$(node_ip "$i")" "$EXEC_PORT" "$LAB_DIR/exec-token" -- "$@"
}

cmd_status() {
  local n
  for n in etcd kube-apiserver kube-scheduler kube-controller-manager api-door-ns api-door-host $(nodes_running | sed 's/^/node-/'); do
    printf '%-26s %s\n' "$n" "$(pid_of "$n" || echo '-')"
  done
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  exec) shift; [ $# -ge 1 ] || die "usage: hack/lab.sh exec NODE -- CMD [ARG...]"; cmd_exec "$@" ;;
  kill) [ $# -eq 2 ] || die "usage: hack/lab.sh kill NODE"; cmd_kill "$2" ;;
  status) cmd_status ;;
  *) echo "usage: hack/lab.sh up|down|status|exec NODE -- CMD...|kill NODE" >&2; exit 2 ;;
esac
