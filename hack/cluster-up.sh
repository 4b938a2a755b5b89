#!/usr/bin/env bash
# Starts the test cluster in the background, idempotently: etcd, kube-apiserver, kube-scheduler and
# kube-controller-manager on loopback and a containerd of its own (root, state, socket and CNI config
# under .cluster/), with the offline test images imported, and two image registries (TLS; one with
# htpasswd credentials, one anonymous) holding some of them. Writes .cluster/env (shell-sourceable)
# and .cluster/kubeconfig.
set -euo pipefail
. "$(dirname "$0")/cluster-lib.sh"
started=$SECONDS
mkdir -p "$CLUSTER_DIR"/{pki,etcd,containerd,cni/net.d,cni/ipam,images,logs/pods,bin,registry/private,registry/public} "$RUN_DIR"
AGNHOST_BIN="$BIN/agnhost-$AGNHOST_VERSION" NNP_BIN="$BIN/nnp-$KUBE_VERSION" E2E_BUSYBOX_BIN="$BIN/busybox-$BUSYBOX_VERSION"
for b in "$ETCD_BIN" "$APISERVER_BIN" "$SCHEDULER_BIN" "$CONTROLLER_MANAGER_BIN" "$KUBECTL_BIN" "$CRICTL_BIN" "$AGNHOST_BIN" "$NNP_BIN" "$E2E_BUSYBOX_BIN"; do
  [ -x "$b" ] || { echo "cluster-up: $b is missing; run 'make setup' first" >&2; exit 1; }
done

# start NAME BINARY ARGS...: runs a component in its own session, logging to .cluster/NAME.log.
start() {
  local name=$1 bin=$2; shift 2
  if pid=$(pid_of "$name"); then log "$name already running (pid $pid)"; return 0; fi
  log "starting $name"
  setsid "$bin" "$@" >>"$CLUSTER_DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$CLUSTER_DIR/$name.pid"
  readlink -f "$bin" >"$CLUSTER_DIR/$name.exe"
}

# wait_for NAME SECONDS COMMAND...: polls until the command succeeds or the component died.
wait_for() {
  local name=$1 secs=$2 i; shift 2
  for ((i = 0; i < secs * 10; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    pid_of "$name" >/dev/null || { log "$name exited; last lines of .cluster/$name.log:"; tail -20 "$CLUSTER_DIR/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  log "$name not ready after ${secs}s; last lines of .cluster/$name.log:"; tail -20 "$CLUSTER_DIR/$name.log" >&2; exit 1
}

# --- keys and certificates (once) ---
pki="$CLUSTER_DIR/pki"
if [ ! -f "$pki/apiserver.crt" ]; then
  log "generating CA, serving certificate, service-account signing keys and admin token"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=nodelet-test-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' >"$pki/apiserver.ext"
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 3650 \
    -extfile "$pki/apiserver.ext" -out "$pki/apiserver.crt" 2>/dev/null
  service_account_keys_and_admin_token "$pki"
fi
# The API server's client certificate for the node API (kubectl logs/exec/port-forward go through
# it), as on a production cluster: issued by the cluster CA, in system:masters, so a node's
# SubjectAccessReview for it is allowed.
if [ ! -f "$pki/apiserver-kubelet-client.crt" ]; then
  openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
    -keyout "$pki/apiserver-kubelet-client.key" -out "$pki/apiserver-kubelet-client.csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >"$pki/apiserver-kubelet-client.ext"
  openssl x509 -req -in "$pki/apiserver-kubelet-client.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 3650 \
    -extfile "$pki/apiserver-kubelet-client.ext" -out "$pki/apiserver-kubelet-client.crt" 2>/dev/null
  chmod 600 "$pki/apiserver-kubelet-client.key"
fi
# The nodes' serving certificate for their node API (port 10250), issued by the cluster CA for
# the names the API server dials (every test node's Hostname address is this machine's name, and
# its InternalIP one of its addresses), so that the API server can verify it
# (--kubelet-certificate-authority); and the node e2e suite's node address (cluster-lib.sh). Made
# again when the machine's names change.
host_ips=$(ip -o -4 addr show scope global 2>/dev/null | awk '$2 !~ /^(nodelet|cni|veth)/ {sub("/.*", "", $4); printf ",IP:%s", $4}')
node_sans="DNS:$(hostname),DNS:localhost,IP:127.0.0.1$host_ips,IP:$NODE_API_NETNS_IP"
if [ ! -f "$pki/node-serving.crt" ] || ! grep -qxF "subjectAltName=$node_sans" "$pki/node-serving.ext" 2>/dev/null; then
  openssl req -newkey rsa:2048 -nodes -subj "/O=system:nodes/CN=system:node:$(hostname)" \
    -keyout "$pki/node-serving.key" -out "$pki/node-serving.csr" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$node_sans" >"$pki/node-serving.ext"
  openssl x509 -req -in "$pki/node-serving.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 3650 \
    -extfile "$pki/node-serving.ext" -out "$pki/node-serving.crt" 2>/dev/null
  chmod 600 "$pki/node-serving.key"
fi
token=$(cat "$pki/admin-token")
apiserver="https://127.0.0.1:$APISERVER_PORT"

cat >"$CLUSTER_DIR/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: nodelet-test
  cluster:
    server: $apiserver
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: admin
  user:
    token: $token
contexts:
- name: nodelet-test
  context: {cluster: nodelet-test, user: admin}
current-context: nodelet-test
KUBECONFIG
chmod 600 "$CLUSTER_DIR/kubeconfig"

# --- etcd ---
start etcd "$ETCD_BIN" --name nodelet-test --data-dir "$CLUSTER_DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "nodelet-test=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls "" \
  --quota-backend-bytes 4294967296 --log-level warn

# --- image registries: the distribution registry, on loopback with TLS from a CA of their own ---
# "private" takes htpasswd credentials (pull secrets are tested against it), "public" is anonymous.
# Both runtimes trust the CA through certs.d/<host:port>/ (containerd's config_path with a
# hosts.toml, the process runtime and skopeo by the docker-style ca.crt beside it).
if [ ! -f "$pki/registry.crt" ]; then
  log "generating the registries' CA, serving certificate and password"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=nodelet-test-registry-ca" \
    -keyout "$pki/registry-ca.key" -out "$pki/registry-ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=nodelet-test-registry" -keyout "$pki/registry.key" -out "$pki/registry.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$pki/registry.ext"
  openssl x509 -req -in "$pki/registry.csr" -CA "$pki/registry-ca.crt" -CAkey "$pki/registry-ca.key" -CAcreateserial -days 3650 \
    -extfile "$pki/registry.ext" -out "$pki/registry.crt" 2>/dev/null
  openssl rand -hex 16 >"$pki/registry-password"
  htpasswd -Bbn nodelet "$(cat "$pki/registry-password")" >"$pki/registry.htpasswd" 2>/dev/null
  chmod 600 "$pki/registry-ca.key" "$pki/registry.key" "$pki/registry-password"
fi
registry_user=nodelet registry_password=$(cat "$pki/registry-password")
certs_d="$CLUSTER_DIR/certs.d"
for port in "$REGISTRY_PORT" "$PUBLIC_REGISTRY_PORT"; do
  mkdir -p "$certs_d/127.0.0.1:$port"
  cp "$pki/registry-ca.crt" "$certs_d/127.0.0.1:$port/ca.crt"
  # containerd 1.6 tries the [host] entry, then the server itself (over plain HTTP for a loopback
  # host unless it has a CA of its own): both name the CA, so a missing tag reads "not found".
  printf 'server = "https://127.0.0.1:%s"\nca = "%s"\n\n[host."https://127.0.0.1:%s"]\n  capabilities = ["pull", "resolve"]\n  ca = "%s"\n' \
    "$port" "$certs_d/127.0.0.1:$port/ca.crt" "$port" "$certs_d/127.0.0.1:$port/ca.crt" >"$certs_d/127.0.0.1:$port/hosts.toml"
done
for kind in private public; do
  port=$REGISTRY_PORT auth="auth:
  htpasswd: {realm: nodelet-test, path: $pki/registry.htpasswd}"
  [ $kind = public ] && port=$PUBLIC_REGISTRY_PORT auth=""
  cat >"$CLUSTER_DIR/registry/$kind.yml" <<YAML
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: $CLUSTER_DIR/registry/$kind}
  delete: {enabled: true}
http:
  addr: 127.0.0.1:$port
  secret: nodelet-test-registry
  tls: {certificate: $pki/registry.crt, key: $pki/registry.key}
$auth
YAML
  start registry-$kind "$(command -v docker-registry)" serve "$CLUSTER_DIR/registry/$kind.yml"
done

# --- containerd (started early: it is independent of the API server) ---
cat >"$CLUSTER_DIR/cni/net.d/10-nodelet.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "nodelet-test",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "dataDir": "$CLUSTER_DIR/cni/ipam"}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
CNI
cat >"$CLUSTER_DIR/containerd/config.toml" <<TOML
version = 2
root = "$CLUSTER_DIR/containerd/root"
state = "$RUN_DIR/containerd-state"
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$CLUSTER_DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "nodelet.test/pause:1"
  # Root here lacks CAP_SYS_RESOURCE: without this, the sandbox's oom_score_adj is refused and RunPodSandbox fails.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
    # The handler the e2e suites' RuntimeClasses name (PreconfiguredRuntimeClassHandler), as
    # Kubernetes' own test nodes configure it: runc under another name.
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.test-handler]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CLUSTER_DIR/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$certs_d"
TOML
start containerd "$(command -v containerd)" --config "$CLUSTER_DIR/containerd/config.toml" --log-level warn

# --- kube-apiserver ---
wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
apiserver_flags=(
  --etcd-servers "http://127.0.0.1:$ETCD_PORT"
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key"
  --client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv"
  --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key"
  --kubelet-certificate-authority "$pki/ca.crt"
  --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction
  --service-account-issuer https://kubernetes.default.svc.cluster.local
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key"
  --api-audiences https://kubernetes.default.svc.cluster.local
  --service-cluster-ip-range "$SERVICE_CIDR"
  --allow-privileged=true
  --endpoint-reconciler-type none
  --profiling=false --cert-dir "$pki" --v 1
)
start kube-apiserver "$APISERVER_BIN" --secure-port "$APISERVER_PORT" "${apiserver_flags[@]}"
if [ "${NODELET_NODE_E2E_APISERVER:-0}" = 1 ] && ! pid_of kube-apiserver-node-e2e >/dev/null; then
  # It dials a node by its Hostname address (this machine's name) as any API server does, but in a
  # mount namespace of its own where /etc/hosts resolves that name to NODE_API_NETNS_IP: the node
  # proxy refuses loopback, and the node API is reached there (test/support/node-api-netns.ts).
  # The machine's /etc/hosts is not touched.
  hosts="$CLUSTER_DIR/node-e2e-hosts"
  printf '127.0.0.1\tlocalhost\n%s\t%s\n' "$NODE_API_NETNS_IP" "$(hostname)" >"$hosts"
  log "starting kube-apiserver-node-e2e"
  setsid unshare -m --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$hosts" \
    "$APISERVER_BIN" --secure-port "$NODE_E2E_APISERVER_PORT" "${apiserver_flags[@]}" >>"$CLUSTER_DIR/kube-apiserver-node-e2e.log" 2>&1 </dev/null &
  echo $! >"$CLUSTER_DIR/kube-apiserver-node-e2e.pid"
  readlink -f "$APISERVER_BIN" >"$CLUSTER_DIR/kube-apiserver-node-e2e.exe"
fi

# --- test images, built offline and imported ---
# nodelet's own test images, and the e2e suite's under their upstream names (build-images.mjs).
images="$CLUSTER_DIR/images"
if [ ! -f "$images/images.txt" ] || [ "$TOP/test/env/images/build-images.mjs" -nt "$images/images.txt" ] ||
  [ "$AGNHOST_BIN" -nt "$images/images.txt" ] || [ "$NNP_BIN" -nt "$images/images.txt" ] || [ "$E2E_BUSYBOX_BIN" -nt "$images/images.txt" ]; then
  gcc -static -O2 -o "$images/pause" "$TOP/test/env/images/pause.c"
  gcc -static -O2 -o "$images/keyctl-probe" "$TOP/test/env/images/keyctl.c"
  # agnhost's image also carries files of its source (the porter's TLS key pair), from the Go module cache.
  agnhost_src="$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION/test/images/agnhost"
  [ -d "$agnhost_src" ] || (cd "$here/gomod/k8s" && go mod download "k8s.io/kubernetes@$KUBE_VERSION")
  node "$TOP/test/env/images/build-images.mjs" "$images" "$images/pause" /bin/busybox --e2e "$AGNHOST_BIN" "$NNP_BIN" "$agnhost_src" "$E2E_BUSYBOX_BIN" >/dev/null
fi
wait_for containerd 30 "$CRICTL_BIN" --runtime-endpoint "unix://$CONTAINERD_SOCK" version
# An image is imported when containerd lacks that reference at that digest (a rebuilt image is new).
have=$(ctr -a "$CONTAINERD_SOCK" -n k8s.io images ls | awk 'NR > 1 {print $1, $3}')
while read -r file ref digest; do
  grep -qxF "$ref $digest" <<<"$have" && continue
  log "importing $ref"
  ctr -a "$CONTAINERD_SOCK" -n k8s.io images import --no-unpack=false "$images/$file" >/dev/null
done <"$images/images.txt"

# The registries' images, pushed from the offline archives (skopeo compresses their layers with
# gzip, as a registry's images usually are): what the image-pull tests pull with and without
# credentials.
registry_has() { curl -sf -o /dev/null --cacert "$pki/registry-ca.crt" ${3:+-u "$3"} \
  -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' "https://127.0.0.1:$1/v2/${2%:*}/manifests/${2##*:}"; }
push_image() { # PORT ARCHIVE REPO:TAG [USER:PASSWORD]
  registry_has "$1" "$3" "${4:-}" && return 0
  log "pushing $3 to 127.0.0.1:$1"
  skopeo copy -q --dest-cert-dir "$certs_d/127.0.0.1:$1" ${4:+--dest-creds "$4"} "oci-archive:$images/$2" "docker://127.0.0.1:$1/$3" >/dev/null
}
for kind in private public; do wait_for registry-$kind 30 curl -s -o /dev/null --cacert "$pki/registry-ca.crt" "https://127.0.0.1:$([ $kind = public ] && echo "$PUBLIC_REGISTRY_PORT" || echo "$REGISTRY_PORT")/v2/"; done
push_image "$REGISTRY_PORT" busybox_1.tar private/busybox:1 "$registry_user:$registry_password"
push_image "$REGISTRY_PORT" busybox_2.tar private/busybox:2 "$registry_user:$registry_password"
push_image "$PUBLIC_REGISTRY_PORT" busybox_1.tar public/busybox:1

wait_for kube-apiserver 90 curl -sf --cacert "$pki/ca.crt" -H "Authorization: Bearer $token" "$apiserver/readyz"
if [ "${NODELET_NODE_E2E_APISERVER:-0}" = 1 ]; then
  wait_for kube-apiserver-node-e2e 90 curl -sf --cacert "$pki/ca.crt" -H "Authorization: Bearer $token" "https://127.0.0.1:$NODE_E2E_APISERVER_PORT/readyz"
fi

# --- kube-scheduler and kube-controller-manager (with the admin kubeconfig, on loopback) ---
# The controllers a node agent's pods depend on: namespaces and garbage collection; node lifecycle
# (it lifts the not-ready taint the API server puts on every new Node, and taints Nodes that stop
# reporting) with taint eviction and pod GC (pods of Nodes that are gone); service accounts and
# their tokens and the root CA ConfigMap; the workload controllers; endpoints; CSR signing and
# approval (with the cluster CA, as kubeadm signs with it).
controllers=namespace-controller,garbage-collector-controller,node-lifecycle-controller,taint-eviction-controller
controllers+=,pod-garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller
controllers+=,root-ca-certificate-publisher-controller,replicaset-controller,deployment-controller
controllers+=,daemonset-controller,job-controller,endpoints-controller,endpointslice-controller
controllers+=,certificatesigningrequest-signing-controller,certificatesigningrequest-approving-controller
kc="$CLUSTER_DIR/kubeconfig"
start kube-scheduler "$SCHEDULER_BIN" --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
  --leader-elect=false --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --v 1
start kube-controller-manager "$CONTROLLER_MANAGER_BIN" --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
  --leader-elect=false --bind-address 127.0.0.1 --secure-port "$CONTROLLER_MANAGER_PORT" \
  --controllers "$controllers" --use-service-account-credentials=false \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" --v 1
wait_for kube-scheduler 60 curl -sfk "https://127.0.0.1:$SCHEDULER_PORT/healthz"
wait_for kube-controller-manager 60 curl -sfk "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz"
# The ServiceAccount admission plugin refuses pods until their namespace's default account exists,
# and the root CA ConfigMap their token volume projects must be there: the controllers make both.
wait_for kube-controller-manager 60 curl -sf --cacert "$pki/ca.crt" -H "Authorization: Bearer $token" "$apiserver/api/v1/namespaces/default/serviceaccounts/default"
wait_for kube-controller-manager 60 curl -sf --cacert "$pki/ca.crt" -H "Authorization: Bearer $token" "$apiserver/api/v1/namespaces/default/configmaps/kube-root-ca.crt"

ln -sf "$KUBECTL_BIN" "$CLUSTER_DIR/bin/kubectl"
ln -sf "$CRICTL_BIN" "$CLUSTER_DIR/bin/crictl"
cat >"$CLUSTER_DIR/env" <<ENV
# Written by hack/cluster-up.sh: source it to talk to the test cluster.
export NODELET_CLUSTER_DIR='$CLUSTER_DIR'
export KUBECONFIG='$CLUSTER_DIR/kubeconfig'
export NODELET_APISERVER='$apiserver'
export NODELET_NODE_E2E_APISERVER='https://127.0.0.1:$NODE_E2E_APISERVER_PORT'
export NODELET_NODE_API_NETNS_IP='$NODE_API_NETNS_IP'
export NODELET_ADMIN_TOKEN_FILE='$pki/admin-token'
export CONTAINER_RUNTIME_ENDPOINT='unix://$CONTAINERD_SOCK'
export IMAGE_SERVICE_ENDPOINT='unix://$CONTAINERD_SOCK'
export NODELET_CONTAINERD_SOCK='$CONTAINERD_SOCK'
export NODELET_POD_CIDR='$POD_CIDR'
export NODELET_PAUSE_IMAGE='nodelet.test/pause:1'
export NODELET_TEST_IMAGE='nodelet.test/busybox:1'
export NODELET_TEST_IMAGE_2='nodelet.test/busybox:2'
export NODELET_IMAGES_DIR='$images'
export NODELET_AGNHOST_IMAGE='registry.k8s.io/e2e-test-images/agnhost:$AGNHOST_VERSION'
export NODELET_POD_LOG_ROOT='$CLUSTER_DIR/logs/pods'
export NODELET_KUBECTL='$KUBECTL_BIN'
export NODELET_CRICTL='$CRICTL_BIN'
export NODELET_NODE_TLS_CERT='$pki/node-serving.crt'
export NODELET_NODE_TLS_KEY='$pki/node-serving.key'
export NODELET_CLIENT_CA='$pki/ca.crt'
export NODELET_REGISTRY='127.0.0.1:$REGISTRY_PORT'
export NODELET_PUBLIC_REGISTRY='127.0.0.1:$PUBLIC_REGISTRY_PORT'
export NODELET_REGISTRY_USER='$registry_user'
export NODELET_REGISTRY_PASSWORD='$registry_password'
export NODELET_REGISTRY_CERTS_DIR='$certs_d'
export NODELET_PRIVATE_IMAGE='127.0.0.1:$REGISTRY_PORT/private/busybox:1'
export NODELET_PUBLIC_IMAGE='127.0.0.1:$PUBLIC_REGISTRY_PORT/public/busybox:1'
export PATH='$CLUSTER_DIR/bin':"\$PATH"
ENV
log "cluster up in $((SECONDS - started)) s: source .cluster/env (KUBECONFIG, CONTAINER_RUNTIME_ENDPOINT, ...)"
