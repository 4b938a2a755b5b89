// Unpacks a layer blob with `tar -x`, hashing the uncompressed stream on its way to tar, so that
// the layer's diff ID (the sha256 of its uncompressed tar, which the image config lists) is checked
// on the very bytes unpacked: a layer whose contents are not the image's is refused.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { FailedPreconditionError } from '../errors.js';
import type { Compression } from './manifest.js';

function exited(child: ChildProcess, name: string, stderr: () => string): Promise<void> {
  return new Promise((resolve, reject) => {
    child.on('error', (err) => reject(new Error(`${name}: ${err.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${name} exited with ${signal ?? code}${stderr().trim() ? `: ${stderr().trim()}` : ''}`));
    });
  });
}

function collect(stream: Readable | null): () => string {
  let text = '';
  stream?.on('data', (c: Buffer) => {
    if (text.length < 4096) text += c.toString('utf8');
  });
  return () => text;
}

/** The uncompressed tar stream of a blob, and a promise of its decompressor's outcome. */
function uncompressed(blob: string, compression: Compression): { stream: Readable; done: Promise<void> } {
  if (compression === 'none') {
    const stream = createReadStream(blob);
    return { stream, done: Promise.resolve() };
  }
  if (compression === 'gzip') {
    const gunzip = createGunzip();
    const done = pipeline(createReadStream(blob), gunzip).catch((err: Error) => {
      throw new Error(`gzip: ${err.message}`);
    });
    return { stream: gunzip, done };
  }
  const zstd = spawn('zstd', ['-d', '-c', '-q', '--', blob], { stdio: ['ignore', 'pipe', 'pipe'] });
  const done = exited(zstd, 'zstd', collect(zstd.stderr));
  return { stream: zstd.stdout!, done };
}

/** Writes a chunk, waiting for the pipe to drain; false once the reader has gone. */
async function write(sink: Writable, chunk: Buffer): Promise<boolean> {
  if (sink.destroyed || sink.writableEnded) return false;
  if (sink.write(chunk)) return true;
  await new Promise<void>((resolve) => {
    const done = () => {
      sink.off('drain', done);
      sink.off('close', done);
      resolve();
    };
    sink.on('drain', done);
    sink.on('close', done);
  });
  return !sink.destroyed;
}

/** Unpacks `blob` into `dest` (which exists, empty); throws unless its diff ID is `diffId`. */
export async function extractLayer(blob: string, compression: Compression, diffId: string, dest: string): Promise<void> {
  const tar = spawn('tar', ['-x', '-f', '-', '-C', dest, '--numeric-owner', '--same-permissions'], { stdio: ['pipe', 'ignore', 'pipe'] });
  const tarDone = exited(tar, 'tar', collect(tar.stderr));
  // tar may stop reading at the archive's end marker, before the padding after it; the padding
  // still counts in the diff ID, so hashing goes on to the end of the stream.
  tar.stdin!.on('error', () => undefined);
  const { stream, done } = uncompressed(blob, compression);
  // Awaited below, or not when the stream fails first: never an unhandled rejection.
  done.catch(() => undefined);
  const hash = createHash('sha256');
  let tarOpen = true;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      hash.update(chunk);
      if (tarOpen) tarOpen = await write(tar.stdin!, chunk);
    }
    await done;
  } catch (err) {
    tar.kill('SIGKILL');
    await tarDone.catch(() => undefined);
    throw new Error(`failed to extract layer ${diffId}: ${(err as Error).message}`);
  } finally {
    tar.stdin!.end();
  }
  try {
    await tarDone;
  } catch (err) {
    throw new Error(`failed to extract layer ${diffId}: ${(err as Error).message}`);
  }
  const got = `sha256:${hash.digest('hex')}`;
  if (got !== diffId) throw new FailedPreconditionError(`failed to extract layer ${diffId}: wrong diff id calculated on extraction "${got}": failed precondition`);
}
