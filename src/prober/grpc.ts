// grpc probes: the gRPC health protocol's Check, with the probe's service name, in plain text.
// Serving succeeds; any other answer, an unimplemented service or a connection not made within
// the timeout fails, in the kubelet's words.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { goDuration } from './exec.js';
import { joinHostPort, PROBE_USER_AGENT, type Attempt } from './types.js';

const protoPath = fileURLToPath(new URL('../../../proto/health.proto', import.meta.url));
type HealthClient = grpc.Client & {
  Check(req: { service: string }, meta: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
};
let healthCtor: (new (addr: string, creds: grpc.ChannelCredentials, opts: grpc.ChannelOptions) => HealthClient) | undefined;

function client(addr: string): HealthClient {
  if (!healthCtor) {
    const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(protoPath, { keepCase: true, enums: String, defaults: true })) as unknown as {
      grpc: { health: { v1: { Health: typeof healthCtor } } };
    };
    healthCtor = pkg.grpc.health.v1.Health;
  }
  return new healthCtor!(addr, grpc.credentials.createInsecure(), { 'grpc.primary_user_agent': PROBE_USER_AGENT, 'grpc.use_local_subchannel_pool': 1 });
}

const codeNames = Object.fromEntries(Object.entries(grpc.status).filter(([, v]) => typeof v === 'number').map(([k, v]) => [v, k])) as Record<number, string>;

/** A gRPC error as Go's status package prints it. */
function goStatus(err: grpc.ServiceError): string {
  const name = (codeNames[err.code] ?? String(err.code)).toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
  return `rpc error: code = ${name} desc = ${err.details}`;
}

export function grpcProbe(host: string, port: number, service: string, timeoutSeconds: number): Promise<Attempt> {
  const addr = joinHostPort(host, port);
  const deadline = new Date(Date.now() + timeoutSeconds * 1000);
  const c = client(addr);
  return new Promise<Attempt>((resolve) => {
    c.waitForReady(deadline, (err) => {
      if (err) return resolve({ result: 'failure', output: `timeout: failed to connect service "${addr}" within ${goDuration(timeoutSeconds)}: context deadline exceeded` });
      c.Check({ service }, new grpc.Metadata(), { deadline }, (e, res) => {
        if (e) {
          if (e.code === grpc.status.UNIMPLEMENTED) return resolve({ result: 'failure', output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${e.details}` });
          if (e.code === grpc.status.DEADLINE_EXCEEDED) return resolve({ result: 'failure', output: `timeout: health rpc did not complete within ${goDuration(timeoutSeconds)}` });
          return resolve({ result: 'failure', output: `error: health rpc probe failed: ${goStatus(e)}` });
        }
        if (res?.status !== 'SERVING') return resolve({ result: 'failure', output: `service unhealthy (responded with "${res?.status ?? 'UNKNOWN'}")` });
        resolve({ result: 'success', output: 'service healthy' });
      });
    });
  }).finally(() => c.close());
}
