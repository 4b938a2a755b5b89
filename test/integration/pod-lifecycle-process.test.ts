// The same pod life cycle on nodelet's process runtime (`nodelet runtime serve`). Every case runs:
// the process runtime shares the host's network, so the pod IP checked is the host's.
import { podLifecycleSuite } from '../support/suites/pod-lifecycle.js';
import { processRuntime } from '../support/runtimes.js';

podLifecycleSuite(() => processRuntime('lifecycle'));
