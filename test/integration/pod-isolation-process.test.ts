// Pods' networks, namespaces and seccomp on nodelet's process runtime: each sandbox a network namespace on
// the cluster's bridge through CNI, as containerd's (see test/support/suites/pod-isolation.ts).
import { podIsolationSuite } from '../support/suites/pod-isolation.js';
import { processRuntime } from '../support/runtimes.js';

podIsolationSuite(() => processRuntime('network'));
