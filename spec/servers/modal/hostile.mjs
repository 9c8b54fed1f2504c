// A hostile gRPC endpoint for sandkit's memory-bound tests: answers every
// call (any path) with HTTP 200, content-type application/grpc, and one
// response message whose 5-byte length prefix announces --length bytes,
// then streams filler as fast as the client reads it, until the client
// resets the stream. A client must fail the call at the prefix (its
// per-message limit) instead of buffering or waiting. h2c on 127.0.0.1.
//
//   node hostile.mjs [--length BYTES]   (default 1073741824)
// Prints "LISTENING <port>"; exits when stdin reaches EOF, and by itself
// after 120 s.
import http2 from 'node:http2';

let length = 1024 ** 3;
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === '--length') length = Number(process.argv[++i]);
  else throw new Error(`unknown argument ${process.argv[i]}`);
}
if (!Number.isInteger(length) || length < 0 || length > 0xffffffff) throw new Error('--length: 0..4294967295');

const filler = Buffer.alloc(64 * 1024, 0x41);
let calls = 0;
const server = http2.createServer();
server.on('stream', (stream) => {
  calls++;
  stream.on('error', () => {});
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(length, 1);
  stream.write(prefix);
  let sent = 0;
  const pump = () => {
    while (!stream.destroyed && !stream.closed && sent < length) {
      sent += filler.length;
      if (!stream.write(filler)) return stream.once('drain', pump);
    }
    return undefined;
  };
  pump();
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`);
  process.stderr.write(`[hostile] h2c on 127.0.0.1:${server.address().port}, prefix length ${length}\n`);
});
const stop = () => {
  process.stderr.write(`[hostile] ${calls} calls\n`);
  process.exit(0);
};
process.stdin.on('end', stop);
process.stdin.resume();
setTimeout(stop, 120_000).unref();
