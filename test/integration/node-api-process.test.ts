// The node API for pods on nodelet's process runtime: the same suite, against the kubelet on containerd.
import { nodeApiSuite } from '../support/suites/node-api.js';
import { processRuntime } from '../support/runtimes.js';

nodeApiSuite(() => processRuntime('node-api'));
