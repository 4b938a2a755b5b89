// Probes on the test cluster's containerd.
import { probesSuite } from '../support/suites/probes.js';
import { containerdRuntime } from '../support/runtimes.js';

probesSuite(async () => containerdRuntime());
