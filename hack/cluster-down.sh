#!/usr/bin/env bash
# Stops exactly what hack/cluster-up.sh started, by the PIDs it recorded: first every pod sandbox in
# the test containerd (so no container or shim outlives it), then containerd, the controller-manager,
# the scheduler, the image registries, the API servers, etcd.
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
  cmd=$( { tr '\0' ' ' <"$proc/cmdline"; } 2>/dev/null) || continue
  case $cmd in
    *containerd-shim*"-address $CONTAINERD_SOCK "*) stop_pid containerd-shim "${proc#/proc/}" 5 ;;
  esac
done
# Containers whose shim is gone (a containerd too busy to stop them through CRI) still run, now
# children of init: kill what is left in the cgroup of each task our containerd recorded.
tasks="$RUN_DIR/containerd-state/io.containerd.runtime.v2.task/k8s.io"
if [ -d "$tasks" ]; then
  for id in $(ls "$tasks"); do
    for procs in /sys/fs/cgroup/pids/k8s.io/"$id"/cgroup.procs /sys/fs/cgroup/k8s.io/"$id"/cgroup.procs /sys/fs/cgroup/unified/k8s.io/"$id"/cgroup.procs; do
      [ -f "$procs" ] || continue
      for p in $(cat "$procs"); do kill -KILL "$p" 2>/dev/null || true; done
    done
  done
  # (a task whose cgroup is already gone is not an error: cat's failure must not end the script)
  left=$(for id in $(ls "$tasks"); do cat /sys/fs/cgroup/pids/k8s.io/"$id"/cgroup.procs 2>/dev/null || true; done | wc -l)
  [ "$left" -eq 0 ] || log "$left container processes could not be stopped"
fi
# Mounts containerd would have released through its shims (rootfs, shm) are released here.
awk -v a="$CLUSTER_DIR/" -v b="$RUN_DIR/" 'index($2, a) == 1 || index($2, b) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
  umount -l "$m" 2>/dev/null || true
done
for c in kube-controller-manager kube-scheduler; do
  if pid=$(pid_of $c); then stop_pid $c "$pid" 15; fi
done
for c in registry-private registry-public; do
  if pid=$(pid_of $c); then stop_pid $c "$pid" 15; fi
done
for c in kube-apiserver-node-e2e kube-apiserver; do
  if pid=$(pid_of $c); then stop_pid $c "$pid" 15; fi
done
if pid=$(pid_of etcd); then stop_pid etcd "$pid" 15; fi
rm -f "$CLUSTER_DIR"/*.pid
