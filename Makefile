# nodelet: the two commands are `make run` (nodelet standalone with example pods) and `make test` (everything, tested).
SHELL := /bin/bash
.DEFAULT_GOAL := help

run:
	hack/run.sh

.PHONY: run help setup build proto cluster-up cluster-down agent-up agent-down bench conformance drills critest lab lab-down test-lab attacks e2e-daemonset image test test-unit test-integration clean

help:
	@echo "make run           nodelet standalone (process runtime, example static pods), shown live; Ctrl-C stops all"
	@echo "make setup         install Debian/npm packages and build the Go test binaries (cached in ~/.cache/nodelet)"
	@echo "make build         compile TypeScript into dist/"
	@echo "make test          setup + build + cluster-up + unit and integration tests + cluster-down"
	@echo "make test-unit     unit tests only (no services)"
	@echo "make test-lab      the pod suites whole with their agents on cgroup v2 lab nodes (make lab's nodes)"
	@echo "make attacks       the attack suite: hostile pods and images against nodelet on both runtimes, in lab nodes"
	@echo "make cluster-up    start etcd, kube-apiserver, kube-scheduler, kube-controller-manager and containerd under .cluster/ (idempotent)"
	@echo "make cluster-down  stop what cluster-up started"
	@echo "make agent-up      run nodelet in the background as node NODE (default nodelet-0); make agent-down stops it"
	@echo "make bench         nodelet, the kubelet and nodelet's process runtime side by side (start latency, density, RSS, CPU); bench/results/latest.json"
	@echo "make drills       reliability drills (test/drills/README.md): crashes, outages, stalls, churn, a full disk, bad input, with invariants after each (DRILLS=, DRILLS_RUNTIMES=); test/drills/results/latest.json"
	@echo "make conformance   Kubernetes' [NodeConformance] specs against nodelet, its process runtime and the kubelet (AGENT=, FOCUS=, SPEC=, PROCS=); test/conformance/results/latest.json"
	@echo "make e2e-daemonset nodelet's image deployed with kubectl apply -k deploy/ onto the real kubelet (node host-0): join, pods, logs/exec, rolling update, the node's death"
	@echo "make image         nodelet's OCI image for the DaemonSet, no container engine, reproducible: dist/image/nodelet_<tag>.tar (IMAGE_TAG=, IMAGE_NAME=)"
	@echo "make lab           cgroup v2 nodes in user-mode Linux with a cluster of their own (LAB_NODES=2, LAB_AGENTS=nodelet-containerd,nodelet-process,kubelet, LAB_NODE_MEMORY=2G); .lab/kubeconfig, hack/lab.sh exec/kill NODE"
	@echo "make lab-down      stop the lab: no process, mount, tap, bridge or namespace left"
	@echo "make proto         refresh proto/api.proto from k8s.io/cri-api and regenerate its TypeScript types"

setup:
	hack/install-deps.sh

build: node_modules
	hack/build.sh

# A worktree may share another checkout's node_modules through a symlink: npm ci there would empty
# the other checkout's (it replaces the link, after clearing what it points to), so it is left alone.
node_modules: package-lock.json
	@if [ -L node_modules ]; then echo "node_modules is a link to $$(readlink node_modules): not reinstalled here (run npm ci in that checkout)" >&2; \
	else npm ci --no-audit --no-fund --loglevel=error && touch node_modules; fi

proto: node_modules
	hack/update-proto.sh

cluster-up:
	hack/cluster-up.sh

cluster-down:
	hack/cluster-down.sh

# Runs nodelet in the background as node NODE (default nodelet-0) against .cluster/.
agent-up: build
	NODE=$(or $(NODE),nodelet-0) hack/agent-up.sh

agent-down:
	NODE=$(or $(NODE),nodelet-0) hack/agent-down.sh

test-unit: build
	node --test --test-reporter=spec dist/test/unit

test-integration: build
	node --test --test-concurrency=1 --test-reporter=spec dist/test/integration

# The suites that look at pods and containers, whole, with their agents on cgroup v2 lab nodes
# (README "The lab"); make test runs a few of their cases in its lab lane.
test-lab: setup build
	node --test --test-reporter=spec dist/test/lab

# The attack suite (hostile pods and images, issue 33) whole, in lab nodes; make test runs a
# reduced set of it in its lab lane.
attacks: setup build
	node --test --test-reporter=spec dist/test/attacks

# nodelet, the kubelet and the process runtime side by side (bench/README.md); brings the test cluster up if it is not.
bench: setup build
	hack/build-go-bins.sh kubelet
	hack/cluster-up.sh
	node dist/bench/bench.js

# The reliability drills (test/drills/README.md) against the test cluster, which they stop and start
# parts of; brings it up if it is not.
drills: setup build
	hack/cluster-up.sh
	node dist/test/drills/run.js

# Kubernetes' own [NodeConformance] specs, one agent at a time (test/conformance/README.md); brings the test cluster up if it is not.
conformance: setup build
	hack/conformance.sh

# nodelet deployed as a DaemonSet (deploy/) onto the real kubelet as node host-0, the whole path: its
# image built and imported, its node identity, a Deployment on it, a rolling update, the node's death.
e2e-daemonset: setup build
	hack/build-go-bins.sh kubelet
	hack/cluster-up.sh
	node --test --test-reporter=spec dist/test/integration/daemonset.test.js

# nodelet's image for the DaemonSet, without a container engine (hack/build-image.sh): reference
# IMAGE_NAME:IMAGE_TAG, by default nodelet.test/nodelet:<package.json's version>; IMAGE_SOURCE= its source label.
image: build
	hack/build-image.sh $(if $(IMAGE_NAME),--name $(IMAGE_NAME)) $(if $(IMAGE_TAG),--tag $(IMAGE_TAG)) $(if $(IMAGE_SOURCE),--source $(IMAGE_SOURCE))

# The lab (README, "The lab"): cgroup v2 nodes in user-mode Linux, each with its agent, in a network
# namespace of their own with their own control plane.
lab: setup build
	hack/lab.sh up

lab-down:
	hack/lab.sh down

# critest (cri-tools) against the process runtime: counts of passed/failed/skipped specs.
critest: setup build
	hack/cluster-up.sh
	hack/critest.sh

# The whole suite on a fresh machine; the cluster is stopped even when tests fail.
test:
	hack/test.sh

clean:
	rm -rf dist
