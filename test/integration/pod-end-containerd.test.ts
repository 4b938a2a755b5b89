// How pods end (sidecars, deadlines, deletion, readiness gates) on the test cluster's containerd.
import { podEndSuite } from '../support/suites/pod-end.js';
import { containerdRuntime } from '../support/runtimes.js';

podEndSuite(async () => containerdRuntime());
