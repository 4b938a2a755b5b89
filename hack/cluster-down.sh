#!/usr/bin/env bash
# Stops exactly what hack/cluster-up.sh started, by the PIDs it recorded: first every pod sandbox in
# the test containerd (so no container or shim outlives it), then containerd, kube-apiserver, etcd.
set -euo pipefail
. "$(dirname "$0")/cluster-lib.sh"
[ -d "$CLUSTER_DIR" ] || exit 0

if pid=$(pid_of containerd); then
  if [ -x "$CRICTL_BIN" ]; then
    timeout 120 "$CRICTL_BIN" --runtime-endpoint "unix://$CONTAINERD_SOCK" rmp --force --all >/dev/null 2>&1 ||
      log "could not remove every pod sandbox through CRI"
  fi
  stop_pid containerd "$pid" 15
fi
# Shims of our containerd (they outlive it by design) are found by the socket they were started for.
for proc in /proc/[0-9]*; do
  cmd=$(tr '\0' ' ' <"$proc/cmdline" 2>/dev/null) || continue
  case $cmd in
    *containerd-shim*"-address $CONTAINERD_SOCK "*) stop_pid containerd-shim "${proc#/proc/}" 5 ;;
  esac
done
if pid=$(pid_of kube-apiserver); then stop_pid kube-apiserver "$pid" 15; fi
if pid=$(pid_of etcd); then stop_pid etcd "$pid" 15; fi
rm -f "$CLUSTER_DIR"/*.pid
