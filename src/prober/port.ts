// A probe's or hook's port: a number, or the name of one of the container's ports (a string is
// always a name, "8080" included, as intstr reads it).
import type { V1Container } from '@kubernetes/client-node';

export function resolveContainerPort(port: number | string | undefined, container: V1Container): number {
  let n: number;
  if (typeof port === 'number') n = port;
  else if (typeof port === 'string') {
    const named = (container.ports ?? []).find((p) => p.name === port);
    if (!named) throw new Error(`port "${port}" not found`);
    n = named.containerPort;
  } else throw new Error(`intOrString had no kind: ${JSON.stringify(port)}`);
  if (n > 0 && n < 65536) return n;
  throw new Error(`invalid port number: ${n}`);
}
