// The frames of the lab's exec protocol (exec-server.mjs says what each kind means).
export function frame(kind, data) {
  const body = Buffer.isBuffer(data) ? data : Buffer.from(data);
  const head = Buffer.alloc(5);
  head.write(kind, 0, 'latin1');
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/** Splits a byte stream into frames, calling onFrame(kind, body) for each whole one. */
export function deframer(onFrame) {
  let buf = Buffer.alloc(0);
  return (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
      const len = buf.readUInt32BE(1);
      onFrame(buf.toString('latin1', 0, 1), buf.subarray(5, 5 + len));
      buf = buf.subarray(5 + len);
    }
  };
}
