#!/bin/sh
# Makes (make) or removes (remove) a cgroupfs path, the cgroupRoot nodelet's kubepods goes under,
# in every cgroup hierarchy of /sys/fs/cgroup: the one of cgroup v2, or each v1 hierarchy and a
# hybrid host's unified one (a new cpuset cgroup given its parent's cpus and memory nodes, as no
# process may join it otherwise).
#   cgroup-root.sh make|remove /PATH
# remove takes the empty cgroups under PATH with it, bottom-up; one still holding processes stays.
# Plain sh with mkdir, rmdir and cat only: it runs in the DaemonSet's image too.
set -eu
op=${1:-}
path=${2:-}
fail() { echo "cgroup-root: $*" >&2; exit 2; }
case $op in make | remove) ;; *) fail "usage: cgroup-root.sh make|remove /PATH" ;; esac
case $path in /?*) ;; *) fail "${path:-''}: expected an absolute cgroupfs path other than /" ;; esac
case $path in *..* | *//* | *[!A-Za-z0-9_./-]*) fail "$path: only letters, digits, _ . - and single slashes, no .." ;; esac
root=/sys/fs/cgroup

make_in() {
  d=$1
  IFS=/
  set -- $path
  unset IFS
  for part in "$@"; do
    [ -n "$part" ] || continue
    parent=$d
    d=$d/$part
    [ -d "$d" ] && continue
    mkdir "$d"
    for f in cpuset.cpus cpuset.mems; do
      if [ -f "$d/$f" ] && [ -z "$(cat "$d/$f")" ]; then cat "$parent/$f" >"$d/$f"; fi
    done
  done
}

remove_tree() {
  for sub in "$1"/*/; do
    [ -d "$sub" ] && remove_tree "${sub%/}"
  done
  rmdir "$1" 2>/dev/null || true
}

each() {
  if [ -f $root/cgroup.controllers ]; then
    "$1" $root
    return
  fi
  # No mount table (a bare chroot): no hierarchy to make it in; nodelet then says the root is missing.
  [ -r /proc/self/mounts ] || return 0
  while read -r _dev point type _rest; do
    case $type:$point in cgroup:$root/* | cgroup2:$root/*) "$1" "$point" ;; esac
  done </proc/self/mounts
}

if [ "$op" = make ]; then
  each make_in
else
  remove_at() { if [ -d "$1$path" ]; then remove_tree "$1$path"; fi; }
  each remove_at
fi
