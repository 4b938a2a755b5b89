# Pinned versions of everything the test cluster builds or installs. Sourced by the hack/ scripts.
# Kubernetes 1.37 is the newest release whose kubelet still runs on containerd 1.x (Debian's 1.6.20):
# the cgroup-driver fallback that containerd 1.x needs is removed only in 1.38.
KUBE_VERSION=v1.37.2
CRI_API_VERSION=v0.37.2
ETCD_VERSION=v3.6.16
CRI_TOOLS_VERSION=v1.37.0
# The agnhost image tag the e2e suite of KUBE_VERSION asks for (test/images/agnhost/VERSION).
AGNHOST_VERSION=2.66.1
# The busybox of the e2e images (upstream's e2e-test-images/busybox:1.37.0-2 is busybox 1.37.0).
BUSYBOX_VERSION=1.37.0
BUSYBOX_SHA256=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4
NODELET_CACHE="${NODELET_CACHE:-$HOME/.cache/nodelet}"
