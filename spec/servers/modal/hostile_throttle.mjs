// A hostile Modal control plane for spec/attack_spec.lua: every call fails
// RESOURCE_EXHAUSTED with a grpc-status-details-bin whose RPCRetryPolicy
// asks the client to wait --retry-after seconds (a 32-bit float: "max" is
// the largest one, 3.4e38). h2c on 127.0.0.1; prints "LISTENING <port>";
// exits when stdin ends.
import http2 from 'node:http2';

let retryAfter = 3.4028234663852886e38;
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === '--retry-after') {
    const v = process.argv[++i];
    retryAfter = v === 'max' ? 3.4028234663852886e38 : Number(v);
  } else throw new Error(`unknown argument ${process.argv[i]}`);
}

const varint = (n) => {
  const out = [];
  while (n > 0x7f) { out.push((n & 0x7f) | 0x80); n >>>= 7; }
  out.push(n);
  return Buffer.from(out);
};
const field = (tag, bytes) => Buffer.concat([Buffer.from([tag]), varint(bytes.length), bytes]);
const policy = Buffer.alloc(5);
policy[0] = (1 << 3) | 5; // retry_after_secs: float, field 1
policy.writeFloatLE(retryAfter, 1);
const any = Buffer.concat([
  field(0x0a, Buffer.from('type.googleapis.com/modal.client.RPCRetryPolicy')),
  field(0x12, policy),
]);
const status = Buffer.concat([Buffer.from([0x08, 8]), field(0x12, Buffer.from('slow down')), field(0x1a, any)]);

let calls = 0;
const server = http2.createServer();
server.on('stream', (stream) => {
  calls++;
  stream.on('error', () => {});
  stream.on('data', () => {});
  stream.respond({
    ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '8', 'grpc-message': 'slow down',
    'grpc-status-details-bin': status.toString('base64').replace(/=+$/, ''),
  }, { endStream: true });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`LISTENING ${server.address().port}\n`));
process.stdin.on('end', () => { process.stderr.write(`[hostile_throttle] ${calls} calls\n`); process.exit(0); });
process.stdin.resume();
