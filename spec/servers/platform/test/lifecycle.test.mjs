// Reference-server contract: LISTENING line, loopback only, exit on stdin EOF
// and on SIGTERM/SIGINT, children and temp state cleaned up; optional TLS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { SERVER, execWs, startServer, waitFor } from './harness.mjs';

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('prints exactly "LISTENING <port>" and listens on 127.0.0.1 only', async () => {
  const srv = await startServer();
  try {
    assert.ok(srv.port > 0);
    const r = await fetch(`http://127.0.0.1:${srv.port}/__admin/state`);
    assert.equal(r.status, 200);
    const out = execFileSync('sh', ['-c', `cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A"' | grep -i ":${srv.port.toString(16).toUpperCase().padStart(4, '0')} " || true`]).toString();
    assert.ok(out.trim().length > 0, 'listening socket found');
    for (const line of out.trim().split('\n')) assert.match(line.trim().split(/\s+/)[1], /^(0100007F|0000000000000000FFFF00000100007F):/);
  } finally {
    await srv.stop();
  }
});

test('exits by itself on stdin EOF, killing running commands and removing its temp state dir', async () => {
  const srv = await startServer();
  const sb = await srv.createSandbox();
  const lease = await srv.lease(sb.id);
  const run = execWs(lease, { command: 'sleep 60' });
  const e = await waitFor(async () => (await srv.log()).ws.at(-1)?.pid, 'process start');
  const dir = path.dirname(path.dirname((await srv.state()).sandboxes[0].dir));
  assert.ok(existsSync(dir));
  srv.proc.stdin.end();
  const { code } = await srv.exited;
  assert.equal(code, 0);
  await run;
  await waitFor(() => !alive(e), 'command killed');
  assert.ok(!existsSync(dir), 'temp state dir removed');
});

test('exits on SIGTERM and on SIGINT; a given --state-dir is kept', async () => {
  for (const sig of ['SIGTERM', 'SIGINT']) {
    const stateDir = mkdtempSync(path.join(os.tmpdir(), 'pl-test-'));
    try {
      const srv = await startServer(['--state-dir', stateDir]);
      await srv.createSandbox();
      srv.proc.kill(sig);
      const { code } = await srv.exited;
      assert.equal(code, 0, sig);
      assert.ok(existsSync(path.join(stateDir, 'sandboxes')));
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  }
});

test('no secrets on stderr: the token never appears in the server log', async () => {
  // Not through startServer, which passes --quiet.
  const p = spawn(process.execPath, [SERVER, '--port', '0', '--token', 'sk_very_secret_token'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => {
    err += d;
  });
  const port = await new Promise((r) => p.stdout.once('data', (d) => r(Number(String(d).split(' ')[1]))));
  const base = `http://127.0.0.1:${port}/v1/railway/projects/p`;
  const c = await fetch(`${base}/sandbox`, { method: 'POST', headers: { authorization: 'Bearer sk_very_secret_token' }, body: JSON.stringify({ environmentId: 'e', env: { SECRET: 'v4lue' } }) });
  assert.equal(c.status, 201);
  await fetch(`${base}/sandbox`, { method: 'POST', headers: { authorization: 'Bearer sk_wrong' }, body: '{}' });
  p.stdin.end();
  await new Promise((r) => p.on('exit', r));
  assert.match(err, /POST \/v1\/railway\/projects\/p\/sandbox -> 201/);
  assert.ok(!err.includes('sk_very_secret_token'));
  assert.ok(!err.includes('sk_wrong'));
  assert.ok(!err.includes('v4lue'));
});

test('TLS: --tls-cert/--tls-key serve https and wss (lease points at wss://)', async (t) => {
  let hasOpenssl = true;
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch {
    hasOpenssl = false;
  }
  if (!hasOpenssl) {
    t.skip('openssl not installed');
    return;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pl-tls-'));
  try {
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    writeFileSync(path.join(dir, 'ext.cnf'), '[req]\ndistinguished_name=dn\n[dn]\n[ext]\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
      '-subj', '/CN=localhost', '-config', path.join(dir, 'ext.cnf'), '-extensions', 'ext'], { stdio: 'ignore' });
    const srv = await startServer(['--tls-cert', cert, '--tls-key', key]);
    try {
      const ca = readFileSync(cert);
      const req = (method, p, body) => new Promise((resolve, reject) => {
        const r = https.request(`https://127.0.0.1:${srv.port}/v1/railway/projects/p${p}`, {
          method, ca, headers: { authorization: 'Bearer test-token', 'content-type': 'application/json' },
        }, (res) => {
          let b = '';
          res.on('data', (d) => {
            b += d;
          });
          res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(b) }));
        });
        r.on('error', reject);
        r.end(body);
      });
      const c = await req('POST', '/sandbox', JSON.stringify({ environmentId: 'e', env: {} }));
      assert.equal(c.status, 201);
      const l = await req('POST', `/sandbox/${c.json.id}/exec-lease`);
      assert.equal(l.json.wsEndpoint, `wss://127.0.0.1:${srv.port}/ws/exec`);
      const r = await execWs(l.json, { command: 'echo tls', wsOptions: { ca } });
      assert.equal(r.stdout.toString(), 'tls\n');
      assert.equal(r.exitCode, 0);
    } finally {
      await srv.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
