// The same pod life cycle on nodelet's process runtime (`nodelet runtime serve`). Every case runs:
// each pod has a network namespace of its own on the cluster's bridge, as on containerd.
import { podLifecycleSuite } from '../support/suites/pod-lifecycle.js';
import { processRuntime } from '../support/runtimes.js';

podLifecycleSuite(() => processRuntime('lifecycle'));
