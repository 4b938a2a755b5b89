// Images from the test cluster's registries on containerd: the same suite, every case.
import { imagePullSuite } from '../support/suites/image-pull.js';
import { containerdRuntime } from '../support/runtimes.js';

imagePullSuite(async () => containerdRuntime());
