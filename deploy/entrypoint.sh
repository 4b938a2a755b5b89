#!/bin/sh
# The image's entrypoint (the DaemonSet's command): the pods' CNI network, the node's iptables
# backend, then nodelet, whose process runtime runs the pods as host processes (no containerd in
# the image). Arguments go to `nodelet run` (the DaemonSet passes --config).
#   NODELET_CNI_CONF_DIR  where the CNI configuration is looked for and written
#                         (default /var/lib/nodelet/cni/net.d; the config's processRuntime.cniConfDir
#                         must name the same directory)
#   NODELET_BRIDGE        the pods' bridge on the node (default nodelet1)
#   NODELET_POD_CIDR      the pods' addresses (default 10.218.0.0/16)
#   NODELET_IP_MASQ       masquerade the pods' traffic leaving the node: true (default) or false
#   NODELET_IPTABLES_MODE legacy, nft, or auto (default): the backend the node's rules are in
#   NODELET_CGROUP_ROOT   the host cgroup the pods' kubepods goes under (default /nodelet/$NODE_NAME):
#                         never the host kubelet's root, whose kubepods holds the host's own pods
set -eu

conf_dir=${NODELET_CNI_CONF_DIR:-/var/lib/nodelet/cni/net.d}
bridge=${NODELET_BRIDGE:-nodelet1}
cidr=${NODELET_POD_CIDR:-10.218.0.0/16}
masq=${NODELET_IP_MASQ:-true}
ipam_dir=/var/lib/nodelet/cni/ipam

fail() { echo "entrypoint: $*" >&2; exit 2; }
# The values go into JSON as they are: only what a bridge name, a CIDR and a boolean can hold.
case $bridge in '' | *[!A-Za-z0-9_.-]*) fail "NODELET_BRIDGE=$bridge is not an interface name" ;; esac
[ ${#bridge} -le 15 ] || fail "NODELET_BRIDGE=$bridge is longer than an interface name can be (15)"
case $cidr in */* ) ;; *) fail "NODELET_POD_CIDR=$cidr is not a CIDR" ;; esac
case $cidr in *[!0-9A-Fa-f.:/]*) fail "NODELET_POD_CIDR=$cidr is not a CIDR" ;; esac
case $masq in true | false) ;; *) fail "NODELET_IP_MASQ=$masq is neither true nor false" ;; esac

# The pods' network: written once. A directory that already holds a CNI configuration (ours from an
# earlier start, or one of the operator's) is left alone; delete 10-nodelet.conflist to have it
# written again from the variables above.
mkdir -p "$conf_dir" "$ipam_dir"
have_conf=false
for f in "$conf_dir"/*.conflist "$conf_dir"/*.conf "$conf_dir"/*.json; do
  [ -e "$f" ] && have_conf=true && break
done
if ! $have_conf; then
  # Written beside and renamed: the runtime never reads half a file.
  cat >"$conf_dir/.10-nodelet.conflist.tmp" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "nodelet",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": $masq,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$cidr"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$ipam_dir"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
CNI
  mv "$conf_dir/.10-nodelet.conflist.tmp" "$conf_dir/10-nodelet.conflist"
  echo "entrypoint: wrote $conf_dir/10-nodelet.conflist (bridge $bridge, $cidr, ipMasq $masq)" >&2
fi

# iptables: the bridge plugin's masquerade and portmap's host ports go into the node's own tables
# (the pod shares the node's network), so they must use the backend the node's other rules (kube-proxy,
# the node's CNI) are in; mixing the two leaves rules that do not see each other. auto takes the
# backend holding more rules, nft when neither holds any (Debian's default).
mode=${NODELET_IPTABLES_MODE:-auto}
rules() { "$@" 2>/dev/null | { n=0; while read -r line; do case $line in -A*) n=$((n + 1)) ;; esac; done; echo $n; }; }
if [ "$mode" = auto ]; then
  legacy=$(( $(rules iptables-legacy-save) + $(rules ip6tables-legacy-save) ))
  nft=$(( $(rules iptables-nft-save) + $(rules ip6tables-nft-save) ))
  if [ "$legacy" -gt "$nft" ]; then mode=legacy; else mode=nft; fi
fi
case $mode in legacy | nft) ;; *) fail "NODELET_IPTABLES_MODE=$mode is not one of auto, legacy, nft" ;; esac
for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  target=/usr/sbin/${t%%-*}-$mode${t#"${t%%-*}"}
  if [ "$(readlink "/etc/alternatives/$t")" != "$target" ]; then
    ln -sfn "$target" "/etc/alternatives/$t" 2>/dev/null || fail "cannot point /etc/alternatives/$t at $target (read-only root?); set NODELET_IPTABLES_MODE to the image's default, nft"
  fi
done
echo "entrypoint: iptables backend $mode" >&2

# The pods' cgroups: made here in every hierarchy (nodelet refuses a cgroupRoot that is not there,
# as the kubelet does); the flag overrides the config file's.
cgroup_root=${NODELET_CGROUP_ROOT:-/nodelet/${NODE_NAME:-node}}
/opt/nodelet/deploy/cgroup-root.sh make "$cgroup_root"
echo "entrypoint: pods' cgroups under $cgroup_root" >&2

# main.js's first line holds the Node flags and environment nodelet runs with; called through node, they are given here.
exec env MALLOC_ARENA_MAX=2 /usr/bin/node --max-semi-space-size=8 /opt/nodelet/dist/src/cli/main.js run "$@" --cgroup-root "$cgroup_root"
