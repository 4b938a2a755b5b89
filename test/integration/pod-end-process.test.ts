// How pods end on nodelet's process runtime: the same suite, every case.
import { podEndSuite } from '../support/suites/pod-end.js';
import { processRuntime } from '../support/runtimes.js';

podEndSuite(() => processRuntime('end'));
