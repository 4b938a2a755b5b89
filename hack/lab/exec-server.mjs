// A lab node's command door (hack/lab.sh exec): runs one command per connection as root and sends
// back its output and exit code. It listens on the node's address on the lab's own network, which
// only the lab's namespace reaches, and takes a command only with the lab's token (.lab/exec-token).
//
// Frames, both ways: one byte of kind, four of length (big-endian), then the bytes.
//   client -> server: 'r' request (JSON {token, argv, env?}), 'i' stdin, 'e' end of stdin,
//                     's' a signal for the command (SIGTERM, SIGINT or SIGHUP: what the client got)
//   server -> client: 'o' stdout, 'x' stderr, 'c' exit (JSON {code, signal?, error?})
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { deframer, frame } from './exec-frames.mjs';

// The signals a client passes on: a stop asked of the host's side reaches the command in the node.
const SIGNALS = new Set(['SIGTERM', 'SIGINT', 'SIGHUP']);
const [address, port, tokenFile] = process.argv.slice(2);
const token = Buffer.from(readFileSync(tokenFile, 'utf8').trim());

const server = createServer((sock) => {
  let child;
  sock.on('error', () => child?.kill('SIGKILL'));
  sock.on('close', () => child?.exitCode === null && child.kill('SIGKILL'));
  sock.on('data', deframer((kind, body) => {
    if (kind === 'r' && !child) {
      let req;
      try {
        req = JSON.parse(body.toString('utf8'));
      } catch {
        return sock.end(frame('c', JSON.stringify({ code: 255, error: 'bad request' })));
      }
      const given = Buffer.from(String(req.token ?? ''));
      if (given.length !== token.length || !timingSafeEqual(given, token)) {
        return sock.end(frame('c', JSON.stringify({ code: 255, error: 'refused: wrong token' })));
      }
      if (!Array.isArray(req.argv) || req.argv.length === 0) {
        return sock.end(frame('c', JSON.stringify({ code: 255, error: 'no command' })));
      }
      child = spawn(req.argv[0], req.argv.slice(1), { env: { ...process.env, ...(req.env ?? {}) }, stdio: ['pipe', 'pipe', 'pipe'] });
      child.stdout.on('data', (d) => sock.write(frame('o', d)));
      child.stderr.on('data', (d) => sock.write(frame('x', d)));
      child.stdin.on('error', () => undefined);
      child.on('error', (err) => sock.end(frame('c', JSON.stringify({ code: 127, error: `${req.argv[0]}: ${err.message}` }))));
      child.on('close', (code, signal) => sock.end(frame('c', JSON.stringify({ code: code ?? 128 + 9, signal }))));
    } else if (kind === 'i' && child) {
      child.stdin.write(body);
    } else if (kind === 'e' && child) {
      child.stdin.end();
    } else if (kind === 's' && child && SIGNALS.has(body.toString('latin1'))) {
      child.kill(body.toString('latin1'));
    }
  }));
});
server.listen(Number(port), address, () => console.log(`lab exec server on ${address}:${port}`));
