// The node API (kubectl logs/exec/attach/port-forward/cp) for pods on containerd, against the kubelet.
import { nodeApiSuite } from '../support/suites/node-api.js';
import { containerdRuntime } from '../support/runtimes.js';

nodeApiSuite(async () => containerdRuntime());
