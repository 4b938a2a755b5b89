// Lifecycle hooks on the test cluster's containerd.
import { hooksSuite } from '../support/suites/hooks.js';
import { containerdRuntime } from '../support/runtimes.js';

hooksSuite(async () => containerdRuntime());
