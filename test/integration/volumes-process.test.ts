// Volumes and a pod's files on nodelet's process runtime: the same suite, every case.
import { volumesSuite } from '../support/suites/volumes.js';
import { processRuntime } from '../support/runtimes.js';

volumesSuite(() => processRuntime('volumes'));
