// The host's side of hack/lab.sh exec: run inside the lab's network namespace, it sends a command to
// a node's exec server (exec-server.mjs), passes stdin through, writes the command's stdout and
// stderr as they come, passes SIGTERM, SIGINT and SIGHUP on to it, and exits with its exit code
// (255 when the node could not be reached).
//   node exec-client.mjs ADDRESS PORT TOKEN_FILE -- CMD [ARG...]
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { deframer, frame } from './exec-frames.mjs';

const args = process.argv.slice(2);
const dash = args.indexOf('--');
const [address, port, tokenFile] = args.slice(0, dash);
const argv = args.slice(dash + 1);
const token = readFileSync(tokenFile, 'utf8').trim();

const sock = connect(Number(port), address);
let done = false;
sock.on('connect', () => {
  sock.write(frame('r', JSON.stringify({ token, argv })));
  process.stdin.on('data', (d) => sock.write(frame('i', d)));
  process.stdin.on('end', () => sock.write(frame('e', '')));
  process.stdin.on('error', () => sock.write(frame('e', '')));
});
// A stop asked of this process is the command's: it gets the signal in the node and its exit code
// still comes back (SIGKILL cannot be caught; the node's side kills the command when the connection goes).
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => (sock.connecting ? process.exit(128 + 15) : sock.write(frame('s', sig))));
sock.on('data', deframer((kind, body) => {
  if (kind === 'o') process.stdout.write(body);
  else if (kind === 'x') process.stderr.write(body);
  else if (kind === 'c') {
    done = true;
    const res = JSON.parse(body.toString('utf8'));
    if (res.error) process.stderr.write(`lab exec: ${res.error}\n`);
    process.stdout.end(() => process.exit(res.code));
  }
}));
sock.on('error', (err) => {
  process.stderr.write(`lab exec: ${address}:${port}: ${err.message}\n`);
  process.exit(255);
});
sock.on('close', () => {
  if (!done) {
    process.stderr.write('lab exec: the node closed the connection before the command ended\n');
    process.exit(255);
  }
});
