// tcpSocket probes: success when a TCP connection opens within the timeout.
import net from 'node:net';
import { dialErrorText, joinHostPort, type Attempt } from './types.js';

export function tcpProbe(host: string, port: number, timeoutMs: number): Promise<Attempt> {
  const addr = joinHostPort(host, port);
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ result: 'failure', output: `dial tcp ${addr}: i/o timeout` });
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ result: 'success', output: '' });
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ result: 'failure', output: dialErrorText(err, addr) });
    });
  });
}
