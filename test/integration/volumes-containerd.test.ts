// Volumes and a pod's files on the test cluster's containerd.
import { volumesSuite } from '../support/suites/volumes.js';
import { containerdRuntime } from '../support/runtimes.js';

volumesSuite(async () => containerdRuntime());
