#!/bin/sh
# The DaemonSet's entrypoint: a containerd of nodelet's own (never the host kubelet's), then nodelet.
set -eu
STATE=/var/lib/nodelet/containerd
RUN=/run/nodelet/containerd
CNI_CONF=/var/lib/nodelet/cni/net.d
POD_CIDR=${NODELET_POD_CIDR:-10.218.0.0/16}
PAUSE_IMAGE=${NODELET_PAUSE_IMAGE:-registry.k8s.io/pause:3.10}
mkdir -p "$STATE" "$RUN" "$CNI_CONF" /var/lib/nodelet/cni/ipam

cat >"$CNI_CONF/10-nodelet.conflist" <<CNI
{"cniVersion": "1.0.0", "name": "nodelet", "plugins": [
  {"type": "bridge", "bridge": "nodelet0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "/var/lib/nodelet/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI

cat >"$STATE/config.toml" <<TOML
version = 2
root = "$STATE/root"
state = "$RUN/state"
[grpc]
  address = "$RUN/containerd.sock"
[ttrpc]
  address = "$RUN/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CNI_CONF"
TOML

containerd --config "$STATE/config.toml" &
for _ in $(seq 1 100); do [ -S "$RUN/containerd.sock" ] && break; sleep 0.1; done
exec /opt/nodelet/dist/src/cli/main.js run "$@"
