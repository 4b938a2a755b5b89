// Probes on nodelet's process runtime: the same suite, every case.
import { probesSuite } from '../support/suites/probes.js';
import { processRuntime } from '../support/runtimes.js';

probesSuite(() => processRuntime('probes'));
