// REST control plane (docs/protocols/platform.md §2): prefix, bearer auth, shapes, status codes,
// structured error bodies.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, fileServer, PROJECT, startServer } from './harness.mjs';

const srv = fileServer();

function assertError(r, status, type) {
  assert.equal(r.status, status, r.text);
  assert.match(r.headers.get('content-type'), /application\/json/);
  assert.equal(typeof r.json.error.message, 'string');
  assert.equal(r.json.error.type, type);
  assert.deepEqual(Object.keys(r.json), ['error']);
  assert.deepEqual(Object.keys(r.json.error).sort(), ['message', 'type']);
}

describe('bearer auth', () => {
  test('missing authorization → 401 authentication_error', async () => {
    const r = await srv.api('POST', '/sandbox', { token: null, json: { environmentId: 'e', env: {} } });
    assertError(r, 401, 'authentication_error');
  });
  test('wrong token → 401, and the given token is not echoed', async () => {
    const r = await srv.api('POST', '/sandbox', { token: 'sk_wrong_secret', json: { environmentId: 'e', env: {} } });
    assertError(r, 401, 'authentication_error');
    assert.ok(!r.text.includes('sk_wrong_secret'));
  });
  test('non-Bearer scheme → 401', async () => {
    const r = await srv.api('GET', '/sandbox/x', { token: null, headers: { authorization: 'Basic dGVzdC10b2tlbg==' } });
    assertError(r, 401, 'authentication_error');
  });
  test('a custom --token is enforced', async () => {
    const s2 = await startServer(['--token', 'sk_custom']);
    try {
      assert.equal((await s2.api('POST', '/sandbox', { json: { environmentId: 'e', env: {} } })).status, 401);
      assert.equal((await s2.api('POST', '/sandbox', { token: 'sk_custom', json: { environmentId: 'e', env: {} } })).status, 201);
    } finally {
      await s2.stop();
    }
  });
});

describe('S1 POST /sandbox', () => {
  test('201 with CreateSandboxResponse; platform id differs from the advisory id', async () => {
    const r = await srv.api('POST', '/sandbox', {
      json: { id: 'mc-project-42', environmentId: 'env_123', env: { A: '1' }, idleTimeoutMinutes: 45, networkIsolation: 'PRIVATE' },
    });
    assert.equal(r.status, 201);
    const j = r.json;
    assert.match(j.id, /^sbx_[0-9a-f]+$/);
    assert.notEqual(j.id, 'mc-project-42');
    assert.match(j.providerResourceId, /^rw_sb_/);
    assert.equal(j.status, 'ready');
    assert.ok(!Number.isNaN(Date.parse(j.createdAt)));
    assert.equal(j.destroyedAt, null);
    assert.equal(j.instanceUrl, null);
    const st = await srv.state();
    const rec = st.sandboxes.find((s) => s.id === j.id);
    assert.equal(rec.recoveryKey, 'mc-project-42');
    assert.equal(rec.environmentId, 'env_123');
    assert.deepEqual(rec.env, { A: '1' });
    assert.equal(rec.networkIsolation, 'PRIVATE');
    assert.equal(rec.idleTimeoutMinutes, 45);
  });
  test('content-type and x-acting-user-id are logged', async () => {
    await srv.api('POST', '/sandbox', { json: { environmentId: 'e', env: {} }, headers: { 'x-acting-user-id': 'external-user-42' } });
    const log = await srv.log();
    const e = log.requests.at(-1);
    assert.equal(e.route, 'create');
    assert.equal(e.project_id, PROJECT);
    assert.equal(e.headers['x-acting-user-id'], 'external-user-42');
    assert.equal(e.headers['content-type'], 'application/json');
    assert.deepEqual(e.body.json, { environmentId: 'e', env: {} });
    assert.equal(e.status, 201);
  });
  test('missing environmentId → 400 invalid_request', async () => {
    assertError(await srv.api('POST', '/sandbox', { json: { env: {} } }), 400, 'invalid_request');
  });
  test('a template or templateId field → 400 (the client must not send them)', async () => {
    assertError(await srv.api('POST', '/sandbox', { json: { environmentId: 'e', env: {}, template: 'node' } }), 400, 'invalid_request');
    assertError(await srv.api('POST', '/sandbox', { json: { environmentId: 'e', env: {}, templateId: 't' } }), 400, 'invalid_request');
  });
  test('bad networkIsolation, env or idleTimeoutMinutes → 400', async () => {
    assertError(await srv.api('POST', '/sandbox', { json: { environmentId: 'e', networkIsolation: 'OPEN' } }), 400, 'invalid_request');
    assertError(await srv.api('POST', '/sandbox', { json: { environmentId: 'e', env: { A: 1 } } }), 400, 'invalid_request');
    assertError(await srv.api('POST', '/sandbox', { json: { environmentId: 'e', idleTimeoutMinutes: -1 } }), 400, 'invalid_request');
  });
  test('malformed JSON body → 400 invalid_request', async () => {
    assertError(await srv.api('POST', '/sandbox', { body: '{"environmentId":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_request');
  });
  test('template fields (E) are accepted', async () => {
    const r = await srv.api('POST', '/sandbox', {
      json: { environmentId: 'e', env: {}, seedCheckpointName: 'snap', templateDefinition: { schemaVersion: 1, operations: [] }, templateBuildEnvs: { X: 'y' } },
    });
    assert.equal(r.status, 201);
  });
});

describe('S2/S3 GET and S4 DELETE /sandbox/{id}', () => {
  test('GET live → 200 same shape; unknown → 404 not_found', async () => {
    const sb = await srv.createSandbox();
    const r = await srv.api('GET', `/sandbox/${sb.id}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, sb);
    assertError(await srv.api('GET', '/sandbox/sbx_nope'), 404, 'not_found');
  });
  test('DELETE → 204, then GET shows destroyedAt, lease → 410 gone', async () => {
    const sb = await srv.createSandbox();
    const d = await srv.api('DELETE', `/sandbox/${sb.id}`);
    assert.equal(d.status, 204);
    assert.equal(d.text, '');
    const g = await srv.api('GET', `/sandbox/${sb.id}`);
    assert.equal(g.status, 200);
    assert.ok(!Number.isNaN(Date.parse(g.json.destroyedAt)));
    assert.equal(g.json.status, 'destroyed');
    assertError(await srv.api('POST', `/sandbox/${sb.id}/exec-lease`), 410, 'gone');
    assertError(await srv.api('DELETE', '/sandbox/sbx_nope'), 404, 'not_found');
  });
  test('a sandbox is scoped to its project', async () => {
    const sb = await srv.createSandbox();
    const r = await srv.api('GET', `/sandbox/${sb.id}`, { base: `${srv.origin}/v1/railway/projects/other_proj` });
    assertError(r, 404, 'not_found');
  });
  test('project ids are percent-decoded', async () => {
    const r = await srv.api('POST', '/sandbox', { base: `${srv.origin}/v1/railway/projects/${encodeURIComponent('p/1 x')}`, json: { environmentId: 'e', env: {} } });
    assert.equal(r.status, 201);
    const log = await srv.log();
    assert.equal(log.requests.at(-1).project_id, 'p/1 x');
  });
});

describe('S5 POST /sandbox/{id}/exec-lease', () => {
  test('ExecLeaseResponse shape; wsEndpoint points back here; no body needed', async () => {
    const sb = await srv.createSandbox();
    const t0 = Date.now();
    const r = await srv.api('POST', `/sandbox/${sb.id}/exec-lease`);
    assert.equal(r.status, 200);
    const l = r.json;
    assert.deepEqual(Object.keys(l).sort(), ['expiresAt', 'jwt', 'provider', 'providerResourceId', 'sandboxId', 'subprotocol', 'wsEndpoint']);
    assert.equal(l.provider, 'railway');
    assert.equal(l.sandboxId, sb.id);
    assert.equal(l.providerResourceId, sb.providerResourceId);
    assert.equal(l.subprotocol, 'railway-shell');
    assert.equal(l.wsEndpoint, `ws://127.0.0.1:${srv.port}/ws/exec`);
    assert.match(l.jwt, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const payload = JSON.parse(Buffer.from(l.jwt.split('.')[1], 'base64url'));
    assert.equal(payload.sub, sb.id);
    const exp = Date.parse(l.expiresAt);
    assert.ok(exp - t0 > 3_500_000 && exp - t0 <= 3_600_000 + 60_000, 'default TTL is one hour');
    assert.ok(Math.abs(payload.exp * 1000 - exp) < 2);
    const log = await srv.log();
    assert.equal(log.requests.at(-1).headers['content-type'], undefined);
  });
  test('every mint is a new JWT with a new lease index', async () => {
    const sb = await srv.createSandbox();
    const a = await srv.lease(sb.id);
    const b = await srv.lease(sb.id);
    assert.notEqual(a.jwt, b.jwt);
  });
  test('unknown sandbox → 404 not_found', async () => {
    assertError(await srv.api('POST', '/sandbox/sbx_nope/exec-lease'), 404, 'not_found');
  });
});

describe('S6 legacy POST /sandbox/{id}/exec', () => {
  test('runs to completion and returns ExecResponse', async () => {
    const sb = await srv.createSandbox({ env: { BASE: 'b' } });
    const r = await srv.api('POST', `/sandbox/${sb.id}/exec`, { json: { command: 'echo ok $BASE $X; echo e >&2; exit 4', env: { X: 'x' } } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { exitCode: 4, stdout: 'ok b x\n', stderr: 'e\n', truncated: false, timedOut: false });
  });
  test('timeoutSec kills the command: exitCode null, timedOut true', async () => {
    const sb = await srv.createSandbox();
    const r = await srv.api('POST', `/sandbox/${sb.id}/exec`, { json: { command: 'sleep 30', timeoutSec: 0.2 } });
    assert.equal(r.json.timedOut, true);
    assert.equal(r.json.exitCode, null);
  });
  test('missing command → 400', async () => {
    const sb = await srv.createSandbox();
    assertError(await srv.api('POST', `/sandbox/${sb.id}/exec`, { json: {} }), 400, 'invalid_request');
  });
});

describe('templates (E)', () => {
  test('S9 POST /sandbox/templates/builds → 202 ready', async () => {
    const r = await srv.api('POST', '/sandbox/templates/builds', { json: { environmentId: 'e', templateDefinition: { schemaVersion: 1, operations: [] } } });
    assert.equal(r.status, 202);
    assert.equal(r.json.status, 'ready');
    assert.match(r.json.templateId, /^tpl_/);
  });
  test('S10/S11 POST /templates then GET polls queued → building → ready', async () => {
    const c = await srv.api('POST', '/templates', { json: { environmentId: 'env_t', definition: { schemaVersion: 1, operations: [{ method: 'x', args: [] }] } } });
    assert.equal(c.status, 201);
    assert.equal(c.json.status, 'queued');
    assert.equal(c.json.error, null);
    const id = c.json.templateId;
    const g1 = await srv.api('GET', `/templates/${id}?environmentId=env_t`);
    assert.equal(g1.json.status, 'building');
    const g2 = await srv.api('GET', `/templates/${id}?environmentId=env_t`);
    assert.deepEqual(g2.json, { templateId: id, status: 'ready', error: null });
    assertError(await srv.api('GET', '/templates/tpl_nope?environmentId=env_t'), 404, 'not_found');
  });
});

describe('routing', () => {
  test('unknown route → 404 not_found', async () => {
    assertError(await srv.api('GET', '/nothing/here'), 404, 'not_found');
  });
  test('older prefix /v1/projects/... and the e2b provider are not served', async () => {
    assertError(await srv.api('POST', '/sandbox', { base: `${srv.origin}/v1/projects/${PROJECT}`, json: { environmentId: 'e' } }), 404, 'not_found');
    assertError(await srv.api('POST', '/sandbox', { base: `${srv.origin}/v1/e2b/projects/${PROJECT}`, json: { environmentId: 'e' } }), 404, 'not_found');
  });
  test('wrong method on a known path → 405 with allow', async () => {
    const r = await srv.api('GET', '/sandbox/x/exec-lease');
    assertError(r, 405, 'invalid_request');
    assert.equal(r.headers.get('allow'), 'POST');
  });
  test('--project-id restricts the served project', async () => {
    const s2 = await startServer(['--project-id', 'only_me']);
    try {
      const r = await api(s2, 'POST', '/sandbox', { json: { environmentId: 'e', env: {} } });
      assertError(r, 404, 'not_found');
      const ok = await api(s2, 'POST', '/sandbox', { base: `${s2.origin}/v1/railway/projects/only_me`, json: { environmentId: 'e', env: {} } });
      assert.equal(ok.status, 201);
    } finally {
      await s2.stop();
    }
  });
});
