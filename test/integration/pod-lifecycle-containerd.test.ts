// The pod life cycle on containerd + runc (see test/support/suites/pod-lifecycle.ts).
import { podLifecycleSuite } from '../support/suites/pod-lifecycle.js';
import { containerdRuntime } from '../support/runtimes.js';

podLifecycleSuite(async () => containerdRuntime());
