// Contract smoke test for the echo server: LISTENING line, HTTP and h2c on
// one port, the 401 upgrade rule, admin endpoints, exit on stdin EOF.
import { spawn } from 'node:child_process';
import http2 from 'node:http2';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';

const server = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'server.mjs');

function start() {
  const child = spawn(process.execPath, [server, '--port', '0'], { stdio: ['pipe', 'pipe', 'ignore'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^LISTENING (\d+)\nTLS (\d+) (\S+)\n/);
      if (m) resolve({ child, port: Number(m[1]), tlsPort: Number(m[2]), ca: m[3] });
    });
    child.on('exit', () => reject(new Error(`server exited early: ${out}`)));
  });
}

test('echo server contract', async () => {
  const s = await start();
  const base = `http://127.0.0.1:${s.port}`;
  const hello = await (await fetch(`${base}/hello`)).json();
  assert.equal(hello.hello, 'world');

  // h2c on the same port
  const session = http2.connect(base);
  const body = await new Promise((resolve, reject) => {
    const req = session.request({ ':path': '/hello' });
    let data = '';
    req.on('data', (d) => { data += d; });
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
  session.close();
  assert.equal(JSON.parse(body).hello, 'world');

  // 401 without railway-shell, open with it
  const rejected = await new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${s.port}/`, ['nope']);
    ws.on('unexpected-response', (req, res) => resolve(res.statusCode));
    ws.on('error', () => {});
  });
  assert.equal(rejected, 401);
  const frames = await new Promise((resolve) => {
    const got = [];
    const ws = new WebSocket(`ws://127.0.0.1:${s.port}/`, ['railway-shell', 'tok']);
    ws.on('open', () => ws.send('hi'));
    ws.on('message', (d) => got.push(d.toString('hex')));
    ws.on('close', (code) => resolve({ got, code }));
  });
  assert.deepEqual(frames.got.slice(0, 2), ['016869', '03657272']);
  assert.equal(frames.code, 1000);

  const faults = await (await fetch(`${base}/__admin/faults`, { method: 'POST', body: '{"delayMs":5}' })).json();
  assert.equal(faults.delayMs, 5);
  const log = await (await fetch(`${base}/__admin/log`)).json();
  assert.ok(log.some((e) => e.type === 'ws-upgrade' && e.offered === 'railway-shell,tok'));

  const exited = new Promise((resolve) => s.child.on('exit', resolve));
  s.child.stdin.end();
  assert.equal(await exited, 0);
});
