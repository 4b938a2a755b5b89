// SPDY/3.1 as Kubernetes' streams use it (the server end of what Go's spdystream speaks): the
// client opens streams (SYN_STREAM, with headers such as streamtype), the server accepts each
// (SYN_REPLY), both send DATA until FIN; PINGs are answered; GOAWAY or a closed socket ends it.
// Header blocks are zlib-compressed with the protocol's dictionary, one context per direction for
// the whole connection. spdystream does no flow control (it ignores WINDOW_UPDATE), so neither
// does this: the socket's own back-pressure paces the writes.
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import zlib from 'node:zlib';
import { SPDY_HEADER_DICTIONARY } from './spdy-dictionary.js';

const VERSION = 3;
const TYPE = { SYN_STREAM: 1, SYN_REPLY: 2, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, HEADERS: 8, WINDOW_UPDATE: 9 } as const;
const FLAG_FIN = 0x01;
const MAX_DATA = (1 << 24) - 1;
/** RST_STREAM status codes used here. */
export const RST = { PROTOCOL_ERROR: 1, INVALID_STREAM: 2, REFUSED_STREAM: 3, CANCEL: 5 } as const;

/** Passes bytes through a zlib stream and answers what a sync flush gives back (one context throughout). */
function pass(z: zlib.Inflate | zlib.Deflate, data: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const fail = (err: Error) => reject(err);
    z.once('error', fail);
    z.write(data);
    z.flush(zlib.constants.Z_SYNC_FLUSH, () => {
      z.off('error', fail);
      resolve((z.read() as Buffer | null) ?? Buffer.alloc(0));
    });
  });
}

/** The connection's header compression: each direction a zlib stream primed with the dictionary. */
class HeaderCodec {
  private readonly inflater = zlib.createInflate({ dictionary: SPDY_HEADER_DICTIONARY });
  private readonly deflater = zlib.createDeflate({ dictionary: SPDY_HEADER_DICTIONARY, level: zlib.constants.Z_BEST_COMPRESSION });

  async decode(block: Buffer): Promise<Map<string, string[]>> {
    const raw = block.length ? await pass(this.inflater, block) : Buffer.alloc(0);
    const headers = new Map<string, string[]>();
    if (raw.length < 4) return headers;
    let off = 0;
    const n = raw.readUInt32BE(off);
    off += 4;
    for (let i = 0; i < n; i++) {
      const nl = raw.readUInt32BE(off);
      const name = raw.toString('latin1', off + 4, off + 4 + nl).toLowerCase();
      off += 4 + nl;
      const vl = raw.readUInt32BE(off);
      const value = raw.toString('utf8', off + 4, off + 4 + vl);
      off += 4 + vl;
      headers.set(name, value.split('\0'));
    }
    return headers;
  }

  encode(headers: Map<string, string[]>): Promise<Buffer> {
    const parts: Buffer[] = [];
    const n = Buffer.alloc(4);
    n.writeUInt32BE(headers.size);
    parts.push(n);
    for (const [name, values] of headers) {
      for (const s of [Buffer.from(name.toLowerCase(), 'latin1'), Buffer.from(values.join('\0'))]) {
        const len = Buffer.alloc(4);
        len.writeUInt32BE(s.length);
        parts.push(len, s);
      }
    }
    return pass(this.deflater, Buffer.concat(parts));
  }

  close(): void {
    this.inflater.close();
    this.deflater.close();
  }
}

/** One stream the client opened. 'data' (Buffer), 'end' (the client's FIN), 'reset'. */
export class SpdyStream extends EventEmitter {
  remoteClosed = false;
  localClosed = false;

  constructor(
    private readonly conn: SpdyConnection,
    readonly id: number,
    readonly headers: Map<string, string[]>,
  ) {
    super();
  }

  header(name: string): string | undefined {
    return this.headers.get(name.toLowerCase())?.[0];
  }

  /** Writes data; answers false when the socket wants the writer to wait for 'drain' on the connection. */
  write(data: Buffer): boolean {
    if (this.localClosed) return true;
    let ok = true;
    for (let off = 0; off < data.length; off += MAX_DATA) ok = this.conn.sendData(this.id, data.subarray(off, off + MAX_DATA), false);
    return ok;
  }

  /** Half-closes our side (FIN). */
  end(): void {
    if (this.localClosed) return;
    this.localClosed = true;
    this.conn.sendData(this.id, Buffer.alloc(0), true);
  }

  reset(status: number = RST.CANCEL): void {
    this.localClosed = true;
    this.remoteClosed = true;
    this.conn.sendReset(this.id, status);
  }
}

/**
 * The server end of a SPDY connection on an upgraded socket. 'stream' is emitted for each stream
 * the client opens (reply with accept() or refuse with reset()); 'close' once the socket is gone.
 */
export class SpdyConnection extends EventEmitter {
  private readonly codec = new HeaderCodec();
  private readonly streams = new Map<number, SpdyStream>();
  /** As a client: the next stream ID (odd), and the replies awaited. */
  private nextId = 1;
  private readonly replies = new Map<number, () => void>();
  private buf: Buffer = Buffer.alloc(0);
  /** Frames are handled one after the other (header blocks decompress in order). */
  private inbound: Promise<void> = Promise.resolve();
  /** Writes waiting behind a reply whose header block is being compressed. */
  private out: Promise<void> = Promise.resolve();
  private queued = 0;
  private closed = false;
  private lastStreamId = 0;

  constructor(private readonly socket: Duplex) {
    super();
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.emit('drain'));
    // Frames already read are handled first (a header block may still be decompressing).
    socket.on('close', () => void this.inbound.then(() => this.shutdown()));
    socket.on('error', () => this.shutdown());
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** As a client: opens a stream with these headers; resolves once the server replies. */
  createStream(headers: Record<string, string>): Promise<SpdyStream> {
    const id = this.nextId;
    this.nextId += 2;
    const s = new SpdyStream(this, id, new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), [v]])));
    this.streams.set(id, s);
    const replied = new Promise<SpdyStream>((resolve, reject) => {
      this.replies.set(id, () => resolve(s));
      s.once('reset', () => reject(new Error(`the server refused stream ${id} (${headers.streamtype ?? ''})`)));
    });
    const head = Buffer.alloc(10);
    head.writeUInt32BE(id, 0);
    this.queued++;
    this.out = this.out
      .then(() => this.codec.encode(s.headers))
      .then((block) => this.sendControl(TYPE.SYN_STREAM, 0, Buffer.concat([head, block]), true))
      .catch(() => void this.socket.destroy())
      .finally(() => this.queued--);
    return replied;
  }

  /** Accepts a stream the client opened (SYN_REPLY with no headers); what is sent on it after follows the reply. */
  accept(stream: SpdyStream): void {
    const body = Buffer.alloc(4);
    body.writeUInt32BE(stream.id & 0x7fffffff);
    this.queued++;
    this.out = this.out
      .then(() => this.codec.encode(new Map()))
      .then((block) => this.sendControl(TYPE.SYN_REPLY, 0, Buffer.concat([body, block])))
      .catch(() => void this.socket.destroy())
      .finally(() => this.queued--);
  }

  sendData(id: number, data: Buffer, fin: boolean): boolean {
    if (this.closed) return true;
    const head = Buffer.alloc(8);
    head.writeUInt32BE(id & 0x7fffffff, 0);
    head.writeUInt32BE(((fin ? FLAG_FIN : 0) << 24) | data.length, 4);
    const frame = data.length ? Buffer.concat([head, data]) : head;
    if (this.queued === 0) return this.socket.write(frame);
    this.out = this.out.then(() => void this.socket.write(frame));
    return true;
  }

  sendReset(id: number, status: number): void {
    const body = Buffer.alloc(8);
    body.writeUInt32BE(id & 0x7fffffff, 0);
    body.writeUInt32BE(status, 4);
    this.sendControl(TYPE.RST_STREAM, 0, body);
  }

  /** Ends the connection: GOAWAY, then the socket is closed once what was written is sent. */
  close(): void {
    if (this.closed) return;
    const body = Buffer.alloc(8);
    body.writeUInt32BE(this.lastStreamId, 0);
    this.sendControl(TYPE.GOAWAY, 0, body);
    void this.out.then(() => {
      this.socket.end();
      this.shutdown();
    });
  }

  private sendControl(type: number, flags: number, body: Buffer, inOrder = false): void {
    if (this.closed) return;
    if (this.queued > 0 && type !== TYPE.SYN_REPLY && !inOrder) {
      this.out = this.out.then(() => this.sendControlNow(type, flags, body));
      return;
    }
    this.sendControlNow(type, flags, body);
  }

  private sendControlNow(type: number, flags: number, body: Buffer): void {
    if (this.closed) return;
    const head = Buffer.alloc(8);
    head.writeUInt16BE(0x8000 | VERSION, 0);
    head.writeUInt16BE(type, 2);
    head.writeUInt32BE((flags << 24) | body.length, 4);
    this.socket.write(Buffer.concat([head, body]));
  }

  private shutdown(): void {
    if (this.closed) return;
    this.closed = true;
    this.codec.close();
    for (const s of this.streams.values()) {
      if (!s.remoteClosed) {
        s.remoteClosed = true;
        s.emit('reset');
      }
    }
    this.streams.clear();
    this.emit('close');
  }

  private onData(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= 8) {
      const len = this.buf.readUInt32BE(4) & 0xffffff;
      if (this.buf.length < 8 + len) break;
      const frame = Buffer.from(this.buf.subarray(0, 8 + len));
      this.buf = this.buf.subarray(8 + len);
      this.inbound = this.inbound.then(() => this.onFrame(frame)).catch((err: unknown) => {
        // A frame that cannot be read leaves no way to go on: the connection ends.
        if (this.closed) return;
        this.emit('error', err);
        this.socket.destroy();
        this.shutdown();
      });
    }
  }

  private async onFrame(frame: Buffer): Promise<void> {
    if (this.closed) return;
    const first = frame.readUInt32BE(0);
    const flags = frame[4]!;
    const body = frame.subarray(8);
    if ((first & 0x80000000) === 0) {
      const s = this.streams.get(first & 0x7fffffff);
      if (!s) return;
      if (body.length) s.emit('data', Buffer.from(body));
      if (flags & FLAG_FIN) this.remoteFin(s);
      return;
    }
    const version = (first >>> 16) & 0x7fff;
    if (version !== VERSION) throw new Error(`SPDY version ${version} is not spoken here`);
    switch (first & 0xffff) {
      case TYPE.SYN_STREAM: {
        const id = body.readUInt32BE(0) & 0x7fffffff;
        const headers = await this.codec.decode(body.subarray(10));
        this.lastStreamId = Math.max(this.lastStreamId, id);
        const s = new SpdyStream(this, id, headers);
        this.streams.set(id, s);
        this.emit('stream', s);
        if (flags & FLAG_FIN) this.remoteFin(s);
        return;
      }
      case TYPE.SYN_REPLY: {
        const id = body.readUInt32BE(0) & 0x7fffffff;
        await this.codec.decode(body.subarray(4));
        this.replies.get(id)?.();
        this.replies.delete(id);
        const st = this.streams.get(id);
        if (st && flags & FLAG_FIN) this.remoteFin(st);
        return;
      }
      case TYPE.HEADERS:
        // Extra headers on a stream: read (the compression context must see them) and dropped.
        await this.codec.decode(body.subarray(4));
        return;
      case TYPE.RST_STREAM: {
        const s = this.streams.get(body.readUInt32BE(0) & 0x7fffffff);
        if (!s) return;
        s.remoteClosed = true;
        s.localClosed = true;
        this.streams.delete(s.id);
        s.emit('reset');
        return;
      }
      case TYPE.PING:
        this.sendControl(TYPE.PING, 0, Buffer.from(body.subarray(0, 4)));
        return;
      case TYPE.GOAWAY:
        this.socket.end();
        this.shutdown();
        return;
      default:
        // SETTINGS, WINDOW_UPDATE and the rest change nothing here.
        return;
    }
  }

  private remoteFin(s: SpdyStream): void {
    if (s.remoteClosed) return;
    s.remoteClosed = true;
    s.emit('end');
    if (s.localClosed) this.streams.delete(s.id);
  }
}
