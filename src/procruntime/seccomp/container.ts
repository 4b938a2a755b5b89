// The seccomp program of a container, decided at CreateContainer as containerd decides it: none
// when privileged or unconfined, containerd's default for RuntimeDefault (by the container's
// bounding set), the file's profile for Localhost. A profile that cannot be had fails the create.
import os from 'node:os';
import type { ContainerConfig } from '../../cri/types.js';
import { boundingSet } from '../isolation.js';
import { compileProfile } from './bpf.js';
import { runtimeDefaultProfile } from './default-profile.js';
import { readLocalhostProfile, seccompRequest, SeccompProfileError, type SeccompProfile } from './profile.js';

function kernelVersion(): [number, number] {
  const m = /^(\d+)\.(\d+)/.exec(os.release());
  return m ? [Number(m[1]), Number(m[2])] : [0, 0];
}

/** The profile a container runs under, or undefined for none. */
export function containerSeccompProfile(config: ContainerConfig): SeccompProfile | undefined {
  const sc = config.linux?.security_context;
  if (sc?.privileged) return undefined;
  const req = seccompRequest(sc as never);
  if (req.kind === 'unconfined') return undefined;
  if (req.kind === 'runtime-default') {
    const caps = sc?.capabilities;
    return runtimeDefaultProfile(boundingSet({ add: caps?.add_capabilities ?? [], drop: caps?.drop_capabilities ?? [] }), kernelVersion());
  }
  return readLocalhostProfile(req.path);
}

/** The compiled program, or undefined for none; errors in containerd's words. */
export function containerSeccompProgram(config: ContainerConfig): Buffer | undefined {
  try {
    const p = containerSeccompProfile(config);
    return p ? compileProfile(p) : undefined;
  } catch (err) {
    if (err instanceof SeccompProfileError) throw new SeccompProfileError(`failed to generate seccomp spec opts: ${err.message}`);
    throw err;
  }
}
