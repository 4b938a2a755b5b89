// Images from the test cluster's registries on nodelet's process runtime (over the distribution
// protocol, trusting the registries' CA from the cluster's certs.d): the same suite, every case.
import { imagePullSuite } from '../support/suites/image-pull.js';
import { processRuntime } from '../support/runtimes.js';
import { clusterEnv } from '../support/cluster.js';

imagePullSuite(() => processRuntime('image-pull', ['--registry-certs-dir', clusterEnv().registryCertsDir]));
