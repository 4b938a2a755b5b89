#!/bin/bash
# A lab node's first init (PID 1 of the user-mode Linux guest, hack/lab.sh starts it). The guest's
# root is the host's, read-only through hostfs: this mounts a tmpfs, an overlay of the host's root
# with its upper directory on that tmpfs (what the guest writes stays in its memory), and moves
# into it for the second stage, guest-boot.sh. LAB_TOP and LAB_NODE_DIR come from the kernel's
# command line: the checkout, and the node's scratch directory (the one place it may write on the
# host; its node.env says what the node is).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
set -u
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=755 tmpfs /tmp
mkdir -p /tmp/upper /tmp/work /tmp/root
# The kernel's modules: Debian's directory, or the one hack/lab/uml.sh unpacked a newer kernel's into.
modules=${LAB_UML_MODULES:-/usr/lib/uml/modules}/$(uname -r)
insmod "$modules/kernel/fs/overlayfs/overlay.ko" 2>/dev/null
mount -t overlay -o lowerdir=/,upperdir=/tmp/upper,workdir=/tmp/work overlay /tmp/root || {
  echo "lab: the overlay of the host's root failed" >&2; exec /bin/sh; }
# What the node mounts beside its root: the kernel's own file systems, a fresh /tmp and /run, the
# modules of its kernel where modprobe looks for them, its scratch directory.
mount --move /proc /tmp/root/proc 2>/dev/null
mount --move /sys /tmp/root/sys 2>/dev/null
mount -t devtmpfs devtmpfs /tmp/root/dev
mkdir -p /tmp/root/dev/pts /tmp/root/dev/shm
mount -t devpts devpts /tmp/root/dev/pts
mount -t tmpfs tmpfs /tmp/root/dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp/root/tmp
mount -t tmpfs -o mode=755 tmpfs /tmp/root/run
mkdir -p /tmp/root/lib/modules
mount -t tmpfs -o mode=755 tmpfs /tmp/root/lib/modules
mkdir -p "/tmp/root/lib/modules/$(uname -r)"
mount --bind "$modules" "/tmp/root/lib/modules/$(uname -r)"
# The node's scratch directory, straight from the host (its logs stay there after the node's end).
mount -t hostfs -o "$LAB_NODE_DIR" hostfs "/tmp/root$LAB_NODE_DIR"
# The overlay becomes the mount namespace's root, and the hostfs root goes: a chroot would leave
# it the namespace's root, where setns and pivot_root (runc's exec) would find the host's /proc.
mkdir -p /tmp/root/.oldroot
cd /tmp/root
pivot_root . .oldroot
exec chroot . /bin/bash -c 'umount -l /.oldroot && rmdir /.oldroot; exec "$0"' "$LAB_TOP/hack/lab/guest-boot.sh"
