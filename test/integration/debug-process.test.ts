// nodelet plan and history on nodelet's process runtime: the same suite, every case.
import { debugSuite } from '../support/suites/debug.js';
import { processRuntime } from '../support/runtimes.js';

debugSuite(() => processRuntime('debug'));
