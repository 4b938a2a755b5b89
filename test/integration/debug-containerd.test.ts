// nodelet plan and history on the cluster's containerd: the same suite, every case.
import { debugSuite } from '../support/suites/debug.js';
import { containerdRuntime } from '../support/runtimes.js';

debugSuite(async () => containerdRuntime());
