// Every fault switch, at runtime (POST /__admin/faults) and from start flags,
// plus the pinned retry scenarios (docs/protocols/platform.md §3.5).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DirectExecClient, execWs, fileServer, startServer, waitFor, wsEntries } from './harness.mjs';

const srv = fileServer(['--exit-close-grace-ms', '200'], { reset: true });

describe('admin API', () => {
  test('invalid fault documents are rejected with 400', async () => {
    for (const doc of [
      { nope: 1 },
      { http: [{ route: 'nowhere', status: 500 }] },
      { http: [{ route: 'create' }] },
      { ws: [{ action: 'explode' }] },
      { ws: [{ action: 'close_before_exit', code: 999 }] },
      { ws: [{ action: 'close_before_exit', at: 'later' }] },
      { http: [{ route: 'create', status: 500, times: -1 }] },
      { lease_ttl_ms: 'long' },
    ]) {
      const r = await srv.admin('POST', 'faults', doc);
      assert.equal(r.status, 400, JSON.stringify(doc));
      assert.equal(r.json.error.type, 'invalid_request');
    }
  });
  test('GET /__admin/faults shows rules with counters; merge appends', async () => {
    await srv.setFaults({ http: [{ route: 'get', status: 500, times: 1 }] });
    await srv.setFaults({ ws: [{ action: 'noise' }], lease_ttl_ms: 1000 }, true);
    const sb = await srv.createSandbox();
    await srv.api('GET', `/sandbox/${sb.id}`);
    const f = (await srv.admin('GET', 'faults')).json;
    assert.equal(f.http.length, 1);
    assert.equal(f.http[0].applied, 1);
    assert.equal(f.ws[0].action, 'noise');
    assert.equal(f.lease_ttl_ms, 1000);
  });
  test('reset clears sandboxes, log and runtime faults', async () => {
    await srv.setFaults({ http: [{ route: 'create', status: 500 }] });
    await srv.admin('POST', 'reset');
    await srv.createSandbox();
    await srv.admin('POST', 'reset');
    const st = await srv.state();
    assert.equal(st.sandboxes.length, 0);
    assert.equal(st.leaseCount, 0);
    const log = await srv.log();
    assert.equal(log.requests.length, 0);
    assert.deepEqual((await srv.admin('GET', 'faults')).json.http, []);
  });
  test('GET /__admin/log?since=N returns only newer entries', async () => {
    await srv.createSandbox();
    const { seq } = await srv.log();
    await srv.createSandbox();
    const newer = (await srv.admin('GET', `log?since=${seq}`)).json;
    assert.equal(newer.requests.length, 1);
    assert.ok(newer.requests[0].seq > seq);
  });
  test('POST /__admin/sandboxes/{id}/destroy simulates platform-side teardown', async () => {
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    const run = execWs(lease, { command: 'sleep 30' });
    await waitFor(async () => (await srv.log()).ws.at(-1)?.pid, 'process start');
    const d = await srv.admin('POST', `sandboxes/${sb.id}/destroy`);
    assert.equal(d.status, 200);
    assert.ok(d.json.destroyedAt);
    const r = await run;
    assert.equal(r.closeCode, 1006);
    assert.equal(r.exitCode, null);
    assert.equal((await srv.api('POST', `/sandbox/${sb.id}/exec-lease`)).status, 410);
  });
});

describe('HTTP faults', () => {
  test('410 on lease mint (once), then success', async () => {
    await srv.setFaults({ http: [{ route: 'lease', status: 410, times: 'once' }] });
    const sb = await srv.createSandbox();
    const r = await srv.api('POST', `/sandbox/${sb.id}/exec-lease`);
    assert.equal(r.status, 410);
    assert.deepEqual(r.json, { error: { message: `Sandbox ${sb.id} was destroyed`, type: 'gone' } });
    assert.equal((await srv.api('POST', `/sandbox/${sb.id}/exec-lease`)).status, 200);
  });
  test('5xx N times on create, then 201', async () => {
    await srv.setFaults({ http: [{ route: 'create', status: 503, times: 2 }] });
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await srv.api('POST', '/sandbox', { json: { environmentId: 'e', env: {} } })).status);
    assert.deepEqual(codes, [503, 503, 201]);
    const r = (await srv.log()).requests[0];
    assert.equal(r.response.error.type, 'internal_error');
    assert.equal(r.note, 'injected');
    assert.equal((await srv.state()).sandboxes.length, 1);
  });
  test('skip lets N matching requests through first', async () => {
    await srv.setFaults({ http: [{ route: 'lease', status: 500, skip: 1, times: 1 }] });
    const sb = await srv.createSandbox();
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await srv.api('POST', `/sandbox/${sb.id}/exec-lease`)).status);
    assert.deepEqual(codes, [200, 500, 200]);
  });
  test('HTML 502 body (unstructured)', async () => {
    await srv.setFaults({ http: [{ route: 'get', status: 502, body: 'html' }] });
    const sb = await srv.createSandbox();
    const r = await srv.api('GET', `/sandbox/${sb.id}`);
    assert.equal(r.status, 502);
    assert.match(r.headers.get('content-type'), /text\/html/);
    assert.match(r.text, /^<html>/);
    assert.equal(r.json, undefined);
  });
  test('other bodies: text, empty, custom json ({"foo":"bar"}), custom error type/message', async () => {
    // The first terminating rule that still has uses left answers; the rest
    // are not consulted (and not counted).
    await srv.setFaults({
      http: [
        { route: 'get', status: 401, body: 'text', text: 'nope', times: 1 },
        { route: 'get', status: 500, body: 'empty', times: 1 },
        { route: 'get', status: 500, json: { foo: 'bar' }, times: 1 },
        { route: 'get', status: 404, error_type: 'not_found', message: 'Bucket not found', times: 1 },
      ],
    });
    const sb = await srv.createSandbox();
    const g = () => srv.api('GET', `/sandbox/${sb.id}`);
    const a = await g();
    assert.deepEqual([a.status, a.text], [401, 'nope']);
    const b = await g();
    assert.deepEqual([b.status, b.text], [500, '']);
    const c = await g();
    assert.deepEqual([c.status, c.json], [500, { foo: 'bar' }]);
    const d = await g();
    assert.deepEqual([d.status, d.json], [404, { error: { message: 'Bucket not found', type: 'not_found' } }]);
  });
  test('echo placeholders: the token and the request, in each encoding, inside a JSON error', async () => {
    const forms = ['raw', 'json_slash', 'json_u', 'percent', 'percent_lower', 'form', 'base64', 'base64url'];
    await srv.setFaults({
      http: forms.map((f) => ({ route: 'create', status: 400, times: 1, message: `t={token:${f}} r={request:${f}}` })),
    });
    const body = { environmentId: 'e/1 é' };
    const raw = JSON.stringify(body);
    const want = {
      raw: ['test-token', JSON.stringify(raw).slice(1, -1)],
      json_slash: ['test-token', JSON.stringify(raw).slice(1, -1).replaceAll('/', '\\/')],
      json_u: [[...'test-token'].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`).join(''), null],
      percent: ['test-token', '%7B%22environmentId%22%3A%22e%2F1%20%C3%A9%22%7D'],
      percent_lower: ['test-token', '%7b%22environmentid%22%3a%22e%2f1%20%c3%a9%22%7d'],
      form: ['test-token', '%7B%22environmentId%22%3A%22e%2F1+%C3%A9%22%7D'],
      base64: [Buffer.from('test-token').toString('base64'), Buffer.from(raw).toString('base64')],
      base64url: [Buffer.from('test-token').toString('base64url'), Buffer.from(raw).toString('base64url')],
    };
    for (const f of forms) {
      const r = await srv.api('POST', '/sandbox', { json: body });
      assert.equal(r.status, 400, f);
      assert.equal(r.json.error.type, 'invalid_request', f);
      assert.ok(r.text.includes(`t=${want[f][0]}`), `${f}: ${r.text}`);
      if (f === 'percent_lower') assert.ok(r.text.toLowerCase().includes(`r=${want[f][1]}`), `${f}: ${r.text}`);
      else if (want[f][1]) assert.ok(r.text.includes(`r=${want[f][1]}`), `${f}: ${r.text}`);
    }
  });
  test('endless body: streams until the client hangs up; declared_length sets content-length', async () => {
    await srv.setFaults({ http: [{ route: 'create', body: 'endless', status: 200, declared_length: 1 << 30, times: 1 }] });
    const ctl = new AbortController();
    const res = await fetch(`${srv.base}/sandbox`, {
      method: 'POST', headers: { authorization: 'Bearer test-token', 'content-type': 'application/json' },
      body: '{}', signal: ctl.signal,
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-length'), String(1 << 30));
    const reader = res.body.getReader();
    let got = 0;
    while (got < 1 << 20) got += (await reader.read()).value.length;
    ctl.abort();
    await waitFor(async () => (await srv.log()).requests.at(-1)?.note === 'endless');
    assert.ok((await srv.log()).requests.at(-1).response_bytes >= 1 << 20);
    assert.equal((await srv.admin('POST', 'faults', { http: [{ route: 'get', declared_length: 5, status: 200 }] })).status, 400);
    assert.equal((await srv.admin('POST', 'faults', { http: [{ route: 'get', status: 400, message: '{token:rot13}' }] })).status, 400);
  });
  test('malformed JSON: 2xx with a truncated body (the real action still happens)', async () => {

    await srv.setFaults({ http: [{ route: 'create', body: 'malformed', times: 1 }] });
    const r = await srv.api('POST', '/sandbox', { json: { environmentId: 'e', env: {} } });
    assert.equal(r.status, 201);
    assert.match(r.headers.get('content-type'), /application\/json/);
    assert.throws(() => JSON.parse(r.text));
    assert.equal((await srv.state()).sandboxes.length, 1);
  });
  test('malformed JSON with an error status', async () => {
    await srv.setFaults({ http: [{ route: 'lease', status: 500, body: 'malformed' }] });
    const sb = await srv.createSandbox();
    const r = await srv.api('POST', `/sandbox/${sb.id}/exec-lease`);
    assert.equal(r.status, 500);
    assert.throws(() => JSON.parse(r.text));
  });
  test('slow responses: delay_ms before answering', async () => {
    await srv.setFaults({ http: [{ route: 'get', delay_ms: 300 }] });
    const sb = await srv.createSandbox();
    const t0 = Date.now();
    const r = await srv.api('GET', `/sandbox/${sb.id}`);
    assert.equal(r.status, 200);
    assert.ok(Date.now() - t0 >= 290, 'a timer cannot fire early');
    assert.equal((await srv.log()).requests.at(-1).faults[0].delay_ms, 300);
  });
  test('drop: connection closed without a response', async () => {
    await srv.setFaults({ http: [{ route: 'get', drop: true, times: 1 }] });
    const sb = await srv.createSandbox();
    await assert.rejects(srv.api('GET', `/sandbox/${sb.id}`));
    assert.equal((await srv.log()).requests.at(-1).status, 'dropped');
  });
  test('method and sandbox filters', async () => {
    const a = await srv.createSandbox();
    const b = await srv.createSandbox();
    await srv.setFaults({ http: [{ route: '*', method: 'GET', sandbox: a.id, status: 500 }] });
    assert.equal((await srv.api('GET', `/sandbox/${a.id}`)).status, 500);
    assert.equal((await srv.api('GET', `/sandbox/${b.id}`)).status, 200);
    assert.equal((await srv.api('POST', `/sandbox/${a.id}/exec-lease`)).status, 200);
  });
  test('expired lease: expiresAt in the past, JWT refused at the handshake, next mint fine', async () => {
    await srv.setFaults({ http: [{ route: 'lease', expired: true, times: 1 }] });
    const sb = await srv.createSandbox();
    const l1 = await srv.lease(sb.id);
    assert.ok(Date.parse(l1.expiresAt) < Date.now());
    const r1 = await execWs(l1, { command: 'true' });
    assert.equal(r1.opened, false);
    assert.equal(r1.httpStatus, 401);
    const e = (await wsEntries(srv, 1))[0];
    assert.equal(e.auth, 'jwt_expired');
    const l2 = await srv.lease(sb.id);
    assert.ok(Date.parse(l2.expiresAt) > Date.now());
    assert.equal((await execWs(l2, { command: 'true' })).exitCode, 0);
  });
  test('lease_ttl_ms: short leases expire at the handshake', async () => {
    await srv.setFaults({ lease_ttl_ms: 150 });
    const sb = await srv.createSandbox();
    const l = await srv.lease(sb.id);
    const ttl = Date.parse(l.expiresAt) - Date.now();
    assert.ok(ttl <= 150 && ttl > -1000);
    await waitFor(() => Date.now() > Date.parse(l.expiresAt) + 5, 'lease expiry');
    assert.equal((await execWs(l, { command: 'true' })).httpStatus, 401);
  });
  test('lease_expires_at_null: expiresAt null, JWT without exp is accepted', async () => {
    await srv.setFaults({ lease_expires_at_null: true });
    const sb = await srv.createSandbox();
    const l = await srv.lease(sb.id);
    assert.equal(l.expiresAt, null);
    assert.equal(JSON.parse(Buffer.from(l.jwt.split('.')[1], 'base64url')).exp, undefined);
    assert.equal((await execWs(l, { command: 'true' })).exitCode, 0);
  });
});

describe('WebSocket faults', () => {
  test('close_before_exit once with 1011 server_error: output delivered, no exit frame; next socket fine', async () => {
    await srv.setFaults({ ws: [{ action: 'close_before_exit', times: 'once', code: 1011, reason: 'server_error' }] });
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    const r1 = await execWs(lease, { command: 'echo partial' });
    assert.equal(r1.opened, true);
    assert.equal(r1.exitCode, null);
    assert.equal(r1.stdout.toString(), 'partial\n');
    assert.deepEqual([r1.closeCode, r1.closeReason], [1011, 'server_error']);
    const r2 = await execWs(lease, { command: 'echo ok' });
    assert.equal(r2.exitCode, 0);
    const [e1] = await wsEntries(srv, 2);
    assert.deepEqual(e1.injected_close, { code: 1011, reason: 'server_error', at: 'exit' });
    assert.equal(e1.close.initiator, 'server');
  });
  test('close_before_exit always with 1006 (abrupt TCP drop); partial output kept', async () => {
    await srv.setFaults({ ws: [{ action: 'close_before_exit', code: 1006 }] });
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    for (let i = 0; i < 3; i++) {
      const r = await execWs(lease, { command: 'echo part' });
      assert.equal(r.opened, true);
      assert.equal(r.exitCode, null);
      assert.equal(r.closeCode, 1006);
      assert.equal(r.stdout.toString(), 'part\n');
    }
  });
  test('close_before_exit at open / at init: the command never runs', async () => {
    for (const at of ['open', 'init']) {
      await srv.admin('POST', 'reset');
      await srv.setFaults({ ws: [{ action: 'close_before_exit', at, code: 1011 }] });
      const sb = await srv.createSandbox();
      const r = await execWs(await srv.lease(sb.id), { command: 'touch ran' });
      assert.equal(r.closeCode, 1011);
      assert.equal(r.exitCode, null);
      await srv.setFaults({});
      const ls = await execWs(await srv.lease(sb.id), { command: 'ls' });
      assert.equal(ls.stdout.toString(), '', at);
    }
  });
  test('close_before_exit with destroy_sandbox: the retry mint gets 410', async () => {
    await srv.setFaults({ ws: [{ action: 'close_before_exit', code: 1006, destroy_sandbox: true, times: 1 }] });
    const sb = await srv.createSandbox();
    const r = await execWs(await srv.lease(sb.id), { command: 'echo x' });
    assert.equal(r.closeCode, 1006);
    assert.equal((await srv.api('POST', `/sandbox/${sb.id}/exec-lease`)).status, 410);
  });
  test('reject: handshake refused with a status', async () => {
    await srv.setFaults({ ws: [{ action: 'reject', status: 503, times: 1 }] });
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    const r = await execWs(lease, { command: 'true' });
    assert.equal(r.opened, false);
    assert.equal(r.httpStatus, 503);
    assert.equal((await execWs(lease, { command: 'true' })).exitCode, 0);
  });
  test('stall: the handshake is never answered (client gives up)', async () => {
    await srv.setFaults({ ws: [{ action: 'stall', times: 1 }] });
    const sb = await srv.createSandbox();
    const lease = await srv.lease(sb.id);
    const r = await execWs(lease, { command: 'true', wsOptions: { handshakeTimeout: 200 } });
    assert.equal(r.opened, false);
    assert.equal(r.exitCode, null);
    assert.equal((await srv.log()).ws[0].stalled, true);
  });
  test('delay: the handshake answer is delayed', async () => {
    await srv.setFaults({ ws: [{ action: 'delay', delay_ms: 200 }] });
    const sb = await srv.createSandbox();
    const t0 = Date.now();
    const r = await execWs(await srv.lease(sb.id), { command: 'true' });
    assert.equal(r.exitCode, 0);
    assert.ok(Date.now() - t0 >= 190);
  });
  test('noise: 1-byte binary, unknown tag, malformed text, unknown type, durable_session frames', async () => {
    await srv.setFaults({ ws: [{ action: 'noise' }] });
    const r = await srv.run('echo real');
    assert.equal(r.stdout.toString(), 'real\n');
    assert.equal(r.exitCode, 0);
    const kinds = r.frames.map((f) => (f.binary ? `bin${f.data.length}:${f.data[0]}` : f.text.slice(0, 12)));
    assert.deepEqual(kinds.slice(0, 5), ['bin1:1', 'bin2:2', '{not json', '{"type":"hea', '{"type":"dur']);
  });
  test('flood: small control frames before the command, which then runs normally', async () => {
    await srv.setFaults({ ws: [{ action: 'flood', delay_ms: 300 }] });
    const r = await srv.run('echo real');
    assert.equal(r.stdout.toString(), 'real\n');
    assert.equal(r.exitCode, 0);
    const ws = (await srv.log()).ws ?? [];
    assert.ok(ws.some((e) => e.flood_frames > 100), JSON.stringify(ws.map((e) => e.flood_frames)));
  });
  test('close reason echoing the init_exec frame ({request:raw}), cut to 123 bytes', async () => {
    await srv.setFaults({ ws: [{ action: 'close_before_exit', at: 'init', code: 1011, reason: 'bad {request:raw}' }] });
    const sb = await srv.createSandbox();
    const r = await execWs(await srv.lease(sb.id), { command: 'true', env: { A: 'x'.repeat(200) } });
    assert.equal(r.closeCode, 1011);
    // the encodings write text as it would sit inside a JSON string
    assert.ok(r.closeReason.startsWith('bad {\\"type\\":\\"init_exec\\"'), r.closeReason);
    assert.ok(Buffer.byteLength(r.closeReason) <= 123);
  });
  test('exit_without_code: {"type":"exit","data":{}}', async () => {
    await srv.setFaults({ ws: [{ action: 'exit_without_code' }] });
    const r = await srv.run('exit 3');
    assert.deepEqual(r.exitData, {});
  });
  test('output_after_exit: a stdout frame follows the exit frame', async () => {
    await srv.setFaults({ ws: [{ action: 'output_after_exit' }] });
    const r = await srv.run('true', { closeOnExit: false });
    assert.equal(r.exitCode, 0);
    assert.equal(r.afterExit[0].data.subarray(1).toString(), 'output after exit\n');
  });
  test('close_after_exit: the server closes right after the exit frame', async () => {
    await srv.setFaults({ ws: [{ action: 'close_after_exit', code: 1000 }] });
    const r = await srv.run('true', { closeOnExit: false });
    assert.equal(r.exitCode, 0);
    assert.equal(r.closeCode, 1000);
    const [e] = await wsEntries(srv, 1);
    assert.equal(e.grace_close, undefined);
    assert.deepEqual(e.server_close, { code: 1000, reason: '' });
  });
  test('chunk_bytes: multi-byte UTF-8 split across frames', async () => {
    await srv.setFaults({ ws: [{ action: 'chunk_bytes', bytes: 1 }] });
    const r = await srv.run('printf "h\\303\\251\\342\\202\\254"');
    assert.equal(r.frames.filter((f) => f.binary).length, 6);
    assert.equal(r.stdout.toString('utf8'), 'hé€');
  });
  test('lease_index and sandbox filters target one lease or sandbox', async () => {
    const a = await srv.createSandbox();
    const b = await srv.createSandbox();
    const la = await srv.lease(a.id); // lease 1
    const lb = await srv.lease(b.id); // lease 2
    await srv.setFaults({ ws: [{ action: 'close_before_exit', lease_index: 1 }, { action: 'reject', sandbox: b.id, status: 403, skip: 1 }] });
    assert.equal((await execWs(la, { command: 'true' })).closeCode, 1011);
    assert.equal((await execWs(lb, { command: 'true' })).exitCode, 0);
    assert.equal((await execWs(lb, { command: 'true' })).httpStatus, 403);
  });
});

describe('start flags (shorthands of the same switches)', () => {
  test('--close-before-exit / --close-code / --close-reason', async () => {
    const s = await startServer(['--close-before-exit', 'once', '--close-code', '1011', '--close-reason', 'server_error']);
    try {
      const sb = await s.createSandbox();
      const l = await s.lease(sb.id);
      const r = await execWs(l, { command: 'true' });
      assert.deepEqual([r.closeCode, r.closeReason, r.exitCode], [1011, 'server_error', null]);
      assert.equal((await execWs(l, { command: 'true' })).exitCode, 0);
    } finally {
      await s.stop();
    }
  });
  test('--lease-410, --create-5xx, --html-502, --malformed-json, --delay-ms, --expired-lease, --lease-ttl-ms', async () => {
    const s = await startServer([
      '--create-5xx', '2:502', '--lease-410', 'once', '--html-502', '1', '--html-502-route', 'get',
      '--malformed-json', 'once', '--malformed-json-route', 'delete', '--delay-ms', '1', '--delay-route', 'get',
      '--expired-lease', 'once', '--lease-ttl-ms', '120000',
    ]);
    try {
      const c = [];
      for (let i = 0; i < 3; i++) c.push((await s.api('POST', '/sandbox', { json: { environmentId: 'e', env: {} } })));
      assert.deepEqual(c.map((r) => r.status), [502, 502, 201]);
      const id = c[2].json.id;
      assert.equal((await s.api('POST', `/sandbox/${id}/exec-lease`)).status, 410);
      const expired = await s.api('POST', `/sandbox/${id}/exec-lease`);
      assert.ok(Date.parse(expired.json.expiresAt) < Date.now());
      const fresh = await s.api('POST', `/sandbox/${id}/exec-lease`);
      const ttl = Date.parse(fresh.json.expiresAt) - Date.now();
      assert.ok(ttl > 100_000 && ttl <= 120_000);
      const g = await s.api('GET', `/sandbox/${id}`);
      assert.equal(g.status, 502);
      assert.match(g.text, /<html>/);
      const d = await s.api('DELETE', `/sandbox/${id}`);
      assert.equal(d.status, 200);
      assert.throws(() => JSON.parse(d.text));
    } finally {
      await s.stop();
    }
  });
  test('--faults JSON', async () => {
    const s = await startServer(['--faults', JSON.stringify({ http: [{ route: 'get', status: 418, times: 1 }] })]);
    try {
      const sb = await s.createSandbox();
      assert.equal((await s.api('GET', `/sandbox/${sb.id}`)).status, 418);
      // reset restores the start-up faults (counters included)
      await s.admin('POST', 'reset');
      const sb2 = await s.createSandbox();
      assert.equal((await s.api('GET', `/sandbox/${sb2.id}`)).status, 418);
    } finally {
      await s.stop();
    }
  });
  test('a bad flag exits with status 2 before LISTENING', async () => {
    await assert.rejects(startServer(['--close-before-exit', 'sometimes']), /exited with 2/);
    await assert.rejects(startServer(['--no-such-flag']), /exited with 2/);
  });
});

describe('pinned scenarios (docs/protocols/platform.md §3.5), driven by a model of the client rule', () => {
  test('410 on the first mint → SandboxDestroyedError, one mint, no socket', async () => {
    await srv.setFaults({ http: [{ route: 'lease', status: 410, times: 1 }] });
    const sb = await srv.createSandbox();
    const c = new DirectExecClient(srv, sb.id);
    await assert.rejects(c.exec('echo ok'), (e) => e.name === 'SandboxDestroyedError' && e.attempts === 1);
    const log = await srv.log();
    assert.equal(log.requests.filter((r) => r.route === 'lease').length, 1);
    assert.equal(log.ws.length, 0);
  });
  test('WS drop then 410 on the retry mint → SandboxDestroyedError, one socket', async () => {
    await srv.setFaults({
      ws: [{ action: 'close_before_exit', code: 1006, times: 1 }],
      http: [{ route: 'lease', status: 410, skip: 1, times: 1 }],
    });
    const sb = await srv.createSandbox();
    const c = new DirectExecClient(srv, sb.id);
    await assert.rejects(c.exec('echo ok'), (e) => e.name === 'SandboxDestroyedError' && e.attempts === 2);
    const log = await srv.log();
    assert.equal(log.ws.length, 1);
    assert.deepEqual(log.requests.filter((r) => r.route === 'lease').map((r) => r.status), [200, 410]);
  });
  test('both sockets close with 1011 server_error → SandboxExecTransportError fields', async () => {
    await srv.setFaults({ ws: [{ action: 'close_before_exit', code: 1011, reason: 'server_error', times: 2 }] });
    const sb = await srv.createSandbox();
    const c = new DirectExecClient(srv, sb.id);
    await assert.rejects(c.exec('echo one'), (e) => {
      assert.equal(e.name, 'SandboxExecTransportError');
      assert.deepEqual(
        { sandboxId: e.sandboxId, command: e.command, attempts: e.attempts, opened: e.opened, closeCode: e.closeCode, closeReason: e.closeReason },
        { sandboxId: sb.id, command: 'echo one', attempts: 2, opened: true, closeCode: 1011, closeReason: 'server_error' },
      );
      assert.equal(e.wsEndpoint, `ws://127.0.0.1:${srv.port}/ws/exec`);
      return true;
    });
    assert.equal(c.lease, null);
    const log = await srv.log();
    assert.equal(log.requests.filter((r) => r.route === 'lease').length, 2);
    assert.equal(log.ws.length, 2);
  });
  test('ten concurrent execs whose first socket fails share one retry mint (3 HTTP requests)', async () => {
    // Every socket authenticated with lease 1 fails; lease 2 works.
    await srv.setFaults({ ws: [{ action: 'close_before_exit', lease_index: 1, code: 1006 }] });
    const sb3 = await srv.createSandbox();
    const c3 = new DirectExecClient(srv, sb3.id);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => c3.exec(`echo ${i}`)));
    results.forEach((r, i) => assert.equal(r.stdout.toString(), `${i}\n`));
    const log = await srv.log();
    assert.equal(log.requests.length, 3, 'create + first mint + one shared retry mint');
    assert.deepEqual(log.requests.map((r) => r.route), ['create', 'lease', 'lease']);
    const ws = await wsEntries(srv, 20);
    assert.equal(ws.filter((e) => e.lease_index === 1).length, 10);
    assert.ok(ws.filter((e) => e.lease_index === 1).every((e) => e.close.code === 1006 && e.exit_sent === undefined));
    assert.ok(ws.filter((e) => e.lease_index === 2).every((e) => e.exit_sent === true));
  });
});
