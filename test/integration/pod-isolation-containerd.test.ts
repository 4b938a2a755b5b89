// Pods' networks, namespaces and seccomp on containerd + runc (see test/support/suites/pod-isolation.ts).
import { podIsolationSuite } from '../support/suites/pod-isolation.js';
import { containerdRuntime } from '../support/runtimes.js';

podIsolationSuite(async () => containerdRuntime());
