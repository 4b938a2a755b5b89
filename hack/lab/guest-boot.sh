#!/bin/bash
# A lab node's second init, PID 1 in the node's own root (guest-init.sh made it): cgroup v2 as
# systemd leaves it for the kubelet, the kernel modules a node needs, the node's network, then its
# services, each in a cgroup of its own under system.slice: the exec door (hack/lab.sh exec),
# containerd where the agent uses it, and the agent (nodelet on containerd, nodelet with its
# process runtime, or the kubelet). hack/lab.sh wrote what this node is in node.env.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
set -u
. "$LAB_NODE_DIR/node.env"
log=$NODE_DIR/log
mkdir -p "$log"
say() { echo "lab[$LAB_NODE] $*"; }

hostname "$LAB_NODE"
# --- cgroup v2 only, every controller delegated to the root's children, PID 1 in init.scope ---
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
cg=/sys/fs/cgroup
for c in cpuset cpu io memory pids; do
  grep -qw "$c" "$cg/cgroup.controllers" && echo "+$c" >"$cg/cgroup.subtree_control"
done
mkdir -p "$cg/init.scope" "$cg/system.slice"
echo $$ >"$cg/init.scope/cgroup.procs"
for c in $(cat "$cg/cgroup.subtree_control"); do echo "+$c" >"$cg/system.slice/cgroup.subtree_control"; done

# --- kernel: modules, limits ---
for m in overlay veth bridge br_netfilter nf_conntrack nf_nat nf_tables nft_chain_nat nft_compat nft_counter \
  ip_tables iptable_nat iptable_filter iptable_mangle xt_MASQUERADE xt_conntrack xt_mark xt_comment xt_addrtype \
  xt_multiport xt_nat xt_tcpudp ip6_tables ip6table_filter ip6table_nat tun; do
  modprobe -q "$m" || say "module $m did not load"
done
# Each address space in the guest is a process of the host's as well (user-mode Linux runs it in
# one): the node's PID ceiling is what bounds the host's processes a fork bomb in it makes.
sysctl -qw kernel.pid_max="$PID_MAX" kernel.threads-max="$PID_MAX" net.ipv4.ip_forward=1 \
  net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
# The kubelet's cAdvisor needs a clock speed, which user-mode Linux does not print.
mkdir -p /run/lab
{ cat /proc/cpuinfo; printf 'cpu MHz\t\t: %s\n\n' "$CPU_MHZ"; } >/run/lab/cpuinfo
mount --bind /run/lab/cpuinfo /proc/cpuinfo

# --- network: the lab's bridge through the tap, the other nodes' pod CIDRs by their addresses ---
ip link set lo up
ip link set vec0 up
ip addr add "$NODE_IP/$LAB_PREFIX" dev vec0
ip route add default via "$GATEWAY"
for peer in $PEERS; do ip route add "${peer%=*}" via "${peer#*=}"; done
printf '%s\n' "127.0.0.1 localhost" "$HOSTS" >/etc/hosts
echo "$LAB_NODE" >/etc/hostname
printf 'nameserver %s\n' "$GATEWAY" >/etc/resolv.conf
# machine-id: the agents report it as the node's, and each node's is its own.
echo "$MACHINE_ID" >/etc/machine-id

# service NAME CMD...: runs a command in system.slice/NAME.service, its output in the node's log directory.
service() {
  local name=$1; shift
  mkdir -p "$cg/system.slice/$name.service"
  ( echo "$BASHPID" >"$cg/system.slice/$name.service/cgroup.procs"; exec "$@" ) >>"$log/$name.log" 2>&1 </dev/null &
  say "started $name (pid $!)"
}

service lab-exec node "$LAB_TOP/hack/lab/exec-server.mjs" "$NODE_IP" "$EXEC_PORT" "$LAB_DIR/exec-token"

# --- the pods' network: a CNI bridge on the node's pod CIDR, the node their gateway to the other nodes' pods, no masquerade ---
mkdir -p /etc/cni/net.d /var/lib/cni
cat >/etc/cni/net.d/10-lab.conflist <<CNI
{"cniVersion": "1.0.0", "name": "lab", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]],
            "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "/var/lib/cni/networks"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI

if [ "$AGENT" != nodelet-process ]; then
  # overlayfs cannot take an upper directory on an overlay: containerd's root is a tmpfs.
  mkdir -p /var/lib/containerd /etc/containerd
  mount -t tmpfs tmpfs /var/lib/containerd
  cat >/etc/containerd/config.toml <<TOML
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
TOML
  service containerd containerd --config /etc/containerd/config.toml
  for _ in $(seq 1 300); do ctr version >/dev/null 2>&1 && break; sleep 0.1; done
  while read -r file ref _; do
    ctr -n k8s.io images import --no-unpack=false "$LAB_DIR/images/$file" >/dev/null || say "importing $ref failed"
  done <"$LAB_DIR/images/images.txt"
fi

case $AGENT in
  nodelet-containerd | nodelet-process)
    service nodelet env MALLOC_ARENA_MAX=2 node "$LAB_TOP/dist/src/cli/main.js" run --config "$NODE_DIR/agent.yaml" ;;
  kubelet)
    service kubelet "$KUBELET_BIN" --config "$NODE_DIR/agent.yaml" --kubeconfig "$NODE_DIR/kubeconfig" \
      --hostname-override "$LAB_NODE" --node-ip "$NODE_IP" --root-dir /var/lib/kubelet --cert-dir /var/lib/kubelet/pki ;;
esac
say "booted"

# PID 1 reaps whatever ends up orphaned in the node.
while :; do sleep 3600 & wait $!; done
