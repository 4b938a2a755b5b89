// Lifecycle hooks on nodelet's process runtime: the same suite, every case.
import { hooksSuite } from '../support/suites/hooks.js';
import { processRuntime } from '../support/runtimes.js';

hooksSuite(() => processRuntime('hooks'));
