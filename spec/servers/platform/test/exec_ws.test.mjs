// Exec WebSocket (docs/protocols/platform.md §3.2, §3.3, §3.4): subprotocol JWT auth, init_exec,
// stdin_close, tagged binary output, the exit frame, the client's close.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { execWs, fileServer, waitFor, wsEntries } from './harness.mjs';

const srv = fileServer(['--exit-close-grace-ms', '200']);

async function lastWs() {
  return waitFor(async () => {
    const e = (await srv.log()).ws.at(-1);
    return e && (e.close || e.rejected !== undefined) ? e : null;
  }, 'ws entry');
}

describe('handshake and subprotocol auth', () => {
  test('offers [railway-shell, jwt] → 101, server selects railway-shell', async () => {
    const r = await srv.run('true');
    assert.equal(r.opened, true);
    assert.equal(r.protocol, 'railway-shell');
    const e = await lastWs();
    assert.equal(e.auth, 'ok');
    assert.equal(e.selected_protocol, 'railway-shell');
    assert.equal(e.offered.length, 2);
    assert.equal(e.offered[0], 'railway-shell');
    assert.equal(e.authorization, null);
  });
  test('header sent verbatim as "railway-shell, <jwt>" (libwebsockets form) + Authorization → 101 railway-shell', async () => {
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    const res = await new Promise((resolve, reject) => {
      const req = http.request(lease.wsEndpoint.replace('ws:', 'http:'), {
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': randomBytes(16).toString('base64'),
          'sec-websocket-protocol': `railway-shell, ${lease.jwt}`,
          authorization: 'Bearer sometoken',
        },
      });
      req.on('upgrade', (r, socket) => {
        socket.destroy();
        resolve(r);
      });
      req.on('response', (r) => resolve(r));
      req.on('error', reject);
      req.end();
    });
    assert.equal(res.statusCode, 101);
    assert.equal(res.headers['sec-websocket-protocol'], 'railway-shell');
    const e = await lastWs();
    assert.equal(e.offered_raw, `railway-shell, ${lease.jwt}`);
    assert.deepEqual(e.offered, ['railway-shell', lease.jwt]);
    assert.equal(e.authorization, 'Bearer sometoken');
    assert.equal(e.close.code, 1006);
  });
  const rejectCases = [
    ['no railway-shell', (l) => [l.jwt], 401, 'missing_subprotocol'],
    ['railway-shell only (no JWT)', () => ['railway-shell'], 401, 'bad_subprotocol_list'],
    ['JWT first, then railway-shell', (l) => [l.jwt, 'railway-shell'], 401, 'bad_subprotocol_list'],
    ['forged JWT', (l) => ['railway-shell', `${l.jwt.split('.').slice(0, 2).join('.')}.AAAA`], 401, 'jwt_bad_signature'],
    ['garbage JWT', () => ['railway-shell', 'not-a-jwt'], 401, 'jwt_malformed'],
  ];
  for (const [name, protos, status, why] of rejectCases) {
    test(`${name} → ${status} (${why})`, async () => {
      const sb = await srv.createSandbox();
      const lease = await srv.lease(sb.id);
      const r = await execWs(lease, { command: 'true', protocols: protos(lease) });
      assert.equal(r.opened, false);
      assert.equal(r.httpStatus, status);
      assert.equal(JSON.parse(r.httpBody).error.type, 'authentication_error');
      const e = await lastWs();
      assert.equal(e.auth, why);
      assert.equal(e.rejected, status);
    });
  }
  test('lease of a destroyed sandbox → 410 at the handshake', async () => {
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    await srv.api('DELETE', `/sandbox/${sb.id}`);
    const r = await execWs(lease, { command: 'true' });
    assert.equal(r.opened, false);
    assert.equal(r.httpStatus, 410);
    assert.equal((await lastWs()).auth, 'sandbox_destroyed');
  });
  test('revoked leases are refused; a fresh mint works', async () => {
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    await srv.admin('POST', 'revoke-leases');
    const r = await execWs(lease, { command: 'true' });
    assert.equal(r.httpStatus, 401);
    assert.equal((await lastWs()).auth, 'revoked');
    const r2 = await execWs(await srv.lease(sb.id), { command: 'true' });
    assert.equal(r2.exitCode, 0);
  });
  test('wrong path → 404', async () => {
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    const r = await execWs({ ...lease, wsEndpoint: lease.wsEndpoint.replace('/ws/exec', '/ws/other') }, { command: 'true' });
    assert.equal(r.httpStatus, 404);
  });
});

describe('frames', () => {
  test('stdout tag 1, stderr tag 3, exit frame with exit_code, client close 1000 logged', async () => {
    const r = await srv.run('printf out; printf err >&2; exit 7');
    assert.equal(r.stdout.toString(), 'out');
    assert.equal(r.stderr.toString(), 'err');
    assert.equal(r.exitCode, 7);
    assert.deepEqual(r.exitData, { exit_code: 7 });
    const exitFrame = r.frames.at(-1);
    assert.equal(exitFrame.binary, false);
    assert.equal(exitFrame.text, '{"type":"exit","data":{"exit_code":7}}');
    for (const f of r.frames.slice(0, -1)) {
      assert.equal(f.binary, true);
      assert.ok([1, 3].includes(f.data[0]));
    }
    const e = await lastWs();
    assert.deepEqual(e.close, { code: 1000, reason: '', initiator: 'client', after_exit: true });
    assert.deepEqual(e.frames_received.map((f) => f.json.type), ['init_exec', 'stdin_close']);
    assert.deepEqual(e.warnings, []);
  });
  test('signal death → exit_code 128+N', async () => {
    const r = await srv.run('kill -9 $$');
    assert.equal(r.exitCode, 137);
  });
  test('env: sandbox env then init_exec env; nothing else from the server environment', async () => {
    const sb = await srv.createSandbox({ env: { A: 'sandbox', B: 'sandbox' } });
    const r = await srv.run('echo "$A $B $C"; env | cut -d= -f1 | sort | tr "\\n" " "', { sandbox: sb, env: { B: 'exec', C: 'c' } });
    const [line1, line2] = r.stdout.toString().split('\n');
    assert.equal(line1, 'sandbox exec c');
    const names = line2.trim().split(' ').filter((n) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(n));
    assert.deepEqual(names, ['A', 'B', 'C', 'HOME', 'PATH']);
  });
  test('cwd: default = sandbox dir; relative resolved inside it; absolute as is; missing → dash error, exit 2', async () => {
    const sb = await srv.createSandbox();
    const st = await srv.state();
    const dir = st.sandboxes.find((s) => s.id === sb.id).dir;
    assert.equal((await srv.run('pwd', { sandbox: sb })).stdout.toString(), `${dir}\n`);
    await srv.run('mkdir -p sub/dir', { sandbox: sb });
    assert.equal((await srv.run('pwd', { sandbox: sb, cwd: 'sub/dir' })).stdout.toString(), `${dir}/sub/dir\n`);
    assert.equal((await srv.run('pwd', { sandbox: sb, cwd: '/' })).stdout.toString(), '/\n');
    const r = await srv.run('pwd', { sandbox: sb, cwd: '/no/such/dir' });
    assert.equal(r.exitCode, 2);
    assert.equal(r.stderr.toString(), "sh: 1: cd: can't cd to /no/such/dir\n");
  });
  test('output is streamed as it arrives (a frame before the command ends)', async () => {
    // The command blocks on stdin after its first line, so the first frame
    // can only reach us if output is streamed before exit.
    const r = await srv.run('echo first; read x; echo "second $x"', {
      sendStdinClose: false,
      onFrame: (ws, f) => {
        if (f.binary && f.data.subarray(1).toString() === 'first\n') {
          ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('go\n')]));
          ws.send(JSON.stringify({ type: 'stdin_close' }));
        }
      },
    });
    assert.equal(r.stdout.toString(), 'first\nsecond go\n');
    assert.equal(r.exitCode, 0);
  });
  test('init_exec + stdin_close: a stdin reader sees EOF at once', async () => {
    const r = await srv.run('cat; echo done');
    assert.equal(r.stdout.toString(), 'done\n');
  });
  test('stdin extension: binary tag-0 frames and {"type":"stdin"} text frames before stdin_close', async () => {
    const r1 = await srv.run('cat', { stdin: 'bin\x00ary\n' });
    assert.equal(r1.stdout.toString(), 'bin\x00ary\n');
    const r2 = await srv.run('cat', {
      sendStdinClose: false,
      onOpen: (ws) => {
        ws.send(JSON.stringify({ type: 'stdin', data: { data: 'text ' } }));
        ws.send(JSON.stringify({ type: 'stdin', data: { base64: Buffer.from('b64').toString('base64') } }));
        ws.send(JSON.stringify({ type: 'stdin_close' }));
      },
    });
    assert.equal(r2.stdout.toString(), 'text b64');
  });
  test('stdin after stdin_close is ignored with a warning', async () => {
    const r = await srv.run('cat', {
      onOpen: (ws) => ws.send(Buffer.from([0, 0x41])),
    });
    assert.equal(r.stdout.toString(), '');
    const e = await lastWs();
    assert.ok(e.warnings.includes('stdin after stdin_close ignored'));
  });
  test('without stdin_close a stdin reader waits; the client close kills it', async () => {
    let pidSeen;
    const r = await srv.run('cat', {
      sendStdinClose: false,
      onOpen: async (ws) => {
        const e = await waitFor(async () => {
          const w = (await srv.log()).ws.at(-1);
          return w?.pid ? w : null;
        }, 'process start');
        pidSeen = e.pid;
        ws.close(1000, '');
      },
    });
    assert.equal(r.exitCode, null);
    assert.equal(r.closeCode, 1000);
    const e = await lastWs();
    assert.equal(e.killed_on_close, true);
    assert.equal(e.close.initiator, 'client');
    await waitFor(() => {
      try {
        process.kill(pidSeen, 0);
        return false;
      } catch {
        return true;
      }
    }, 'process gone');
  });
  test('signal frame (railway SDK) is delivered to the process group', async () => {
    const r = await srv.run('trap "echo got-term; exit 5" TERM; echo ready; while :; do sleep 0.05; done', {
      onFrame: (ws, f) => {
        if (f.binary && f.data.subarray(1).toString() === 'ready\n') ws.send(JSON.stringify({ type: 'signal', data: { signal: 'TERM' } }));
      },
    });
    assert.equal(r.exitCode, 5);
    assert.match(r.stdout.toString(), /got-term/);
    assert.deepEqual((await lastWs()).signals, ['SIGTERM']);
  });
  test('durable_session_name in init_exec → a durable_session frame before output', async () => {
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    const r = await execWs(lease, {
      init: false,
      command: 'x',
      onOpen: (ws) => {
        ws.send(JSON.stringify({ type: 'init_exec', data: { command: 'echo hi', durable_session_name: 'ds_1' } }));
        ws.send(JSON.stringify({ type: 'stdin_close' }));
      },
    });
    assert.equal(r.frames[0].text, '{"type":"durable_session","data":{"durable_session_name":"ds_1"}}');
    assert.equal(r.stdout.toString(), 'hi\n');
  });
  test('spec deviations are recorded as warnings (empty cwd/env, timeout key)', async () => {
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    await execWs(lease, {
      init: false,
      command: 'x',
      onOpen: (ws) => {
        ws.send(JSON.stringify({ type: 'init_exec', data: { command: 'true', cwd: '', env: {}, timeoutMs: 5 } }));
        ws.send(JSON.stringify({ type: 'stdin_close' }));
      },
    });
    const e = await lastWs();
    assert.deepEqual(e.warnings.sort(), [
      'init_exec.data has unexpected key timeoutMs',
      'init_exec.data.cwd is empty (spec: omit it)',
      'init_exec.data.env is empty (spec: omit it)',
    ]);
  });
  test('invalid init_exec → server closes 1008', async () => {
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    const r = await execWs(lease, {
      init: false,
      command: 'x',
      onOpen: (ws) => ws.send(JSON.stringify({ type: 'init_exec', data: { cwd: '/' } })),
    });
    assert.equal(r.closeCode, 1008);
    assert.equal(r.closeReason, 'invalid init_exec');
  });
  test('client that never closes after exit: server closes 1000 after the grace period', async () => {
    const r = await srv.run('true', { closeOnExit: false });
    assert.equal(r.exitCode, 0);
    assert.equal(r.closeCode, 1000);
    const e = await lastWs();
    assert.equal(e.grace_close, true);
    assert.equal(e.close.initiator, 'server');
  });
  test('abrupt client drop (no close frame) is logged as 1006', async () => {
    await srv.run('sleep 30', {
      onOpen: async (ws) => {
        await waitFor(async () => (await srv.log()).ws.at(-1)?.pid, 'process start');
        ws.terminate();
      },
    });
    const e = await lastWs();
    assert.equal(e.close.code, 1006);
    assert.equal(e.killed_on_close, true);
  });
  test('background jobs outlive their command (as on a VM) and die with the sandbox', async () => {
    const sb = await srv.createSandbox();
    const r = await srv.run('sleep 60 >/dev/null 2>&1 & echo $!', { sandbox: sb });
    assert.equal(r.exitCode, 0);
    const pid = Number(r.stdout.toString().trim());
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    assert.equal(alive(), true);
    assert.equal((await srv.api('DELETE', `/sandbox/${sb.id}`)).status, 204);
    await waitFor(() => !alive(), 'background job killed');
  });
  test('10 MiB of stdout arrives intact and in order', async () => {
    const r = await srv.run('head -c 10485760 /dev/zero | tr "\\0" "x"; echo; seq 1 5 >&2');
    assert.equal(r.stdout.length, 10 * 1024 * 1024 + 1);
    assert.ok(r.stdout.subarray(0, 10 * 1024 * 1024).every((b) => b === 0x78));
    assert.equal(r.stderr.toString(), '1\n2\n3\n4\n5\n');
    assert.equal(r.exitCode, 0);
  });
  test('one socket per exec; concurrent execs on one lease', async () => {
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => execWs(lease, { command: `echo ${i}` })));
    rs.forEach((r, i) => assert.equal(r.stdout.toString(), `${i}\n`));
    await wsEntries(srv, (await srv.log()).ws.length);
  });
});
