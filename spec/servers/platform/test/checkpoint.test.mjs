// Id-keyed checkpoints (S7/S8) and idle GC:
// docs/protocols/platform.md §4.2, §4.3, §4.6 and §4.8.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileServer, waitFor } from './harness.mjs';

const srv = fileServer([], { reset: true });

const checkpoint = (id, key) => srv.api('POST', `/sandbox/${id}/checkpoint`, { json: { id: key } });
const dropCheckpoint = (id, key) => srv.api('DELETE', `/sandbox/${id}/checkpoint`, { json: { id: key } });

describe('checkpoint recovery across destroy/start', () => {
  test('capture, tear down, create with the same id → filesystem restored; other ids boot fresh', async () => {
    const a = await srv.createSandbox({ id: 'mc-session-42' });
    await srv.run('mkdir -p d && echo keep > d/f.txt', { sandbox: a });
    const c = await checkpoint(a.id, 'mc-session-42');
    assert.equal(c.status, 200);
    assert.equal(c.json.status, 'captured');
    assert.match(c.json.checkpointName, /^ckpt_/);
    assert.equal((await srv.api('DELETE', `/sandbox/${a.id}`)).status, 204);

    const b = await srv.createSandbox({ id: 'mc-session-42' });
    assert.notEqual(b.id, a.id);
    assert.equal((await srv.run('cat d/f.txt', { sandbox: b })).stdout.toString(), 'keep\n');
    const st = await srv.state();
    assert.equal(st.sandboxes.find((s) => s.id === b.id).restoredFrom, c.json.checkpointName);

    const other = await srv.createSandbox({ id: 'someone-else' });
    assert.equal((await srv.run('ls', { sandbox: other })).stdout.toString(), '');
    const anon = await srv.createSandbox();
    assert.equal((await srv.run('ls', { sandbox: anon })).stdout.toString(), '');
  });
  test('the latest capture wins', async () => {
    const a = await srv.createSandbox({ id: 'k' });
    await srv.run('echo 1 > v', { sandbox: a });
    await checkpoint(a.id, 'k');
    await srv.run('echo 2 > v', { sandbox: a });
    const second = await checkpoint(a.id, 'k');
    const b = await srv.createSandbox({ id: 'k' });
    assert.equal((await srv.run('cat v', { sandbox: b })).stdout.toString(), '2\n');
    assert.equal((await srv.state()).checkpoints.length, 1);
    assert.equal((await srv.state()).checkpoints[0].name, second.json.checkpointName);
  });
  test('seedCheckpointName is used only when the primary id has no state', async () => {
    const a = await srv.createSandbox({ id: 'seed-src' });
    await srv.run('echo seeded > s', { sandbox: a });
    const { json } = await checkpoint(a.id, 'seed-src');
    const b = await srv.createSandbox({ id: 'new-key', seedCheckpointName: json.checkpointName });
    assert.equal((await srv.run('cat s', { sandbox: b })).stdout.toString(), 'seeded\n');
    // seed by recovery key works too (E2B clone sends id = seed = checkpointName)
    const c = await srv.createSandbox({ id: 'other', seedCheckpointName: 'seed-src' });
    assert.equal((await srv.run('cat s', { sandbox: c })).stdout.toString(), 'seeded\n');
  });
  test('concurrent captures of one id: one captured, the joiner coalesced with the same name', async () => {
    const a = await srv.createSandbox({ id: 'cc' });
    await srv.run('head -c 2000000 /dev/zero > big', { sandbox: a });
    const [x, y] = await Promise.all([checkpoint(a.id, 'cc'), checkpoint(a.id, 'cc')]);
    assert.deepEqual([x.json.status, y.json.status].sort(), ['captured', 'coalesced']);
    assert.equal(x.json.checkpointName, y.json.checkpointName);
  });
  test('DELETE /checkpoint removes it (next create boots fresh); again → 404', async () => {
    const a = await srv.createSandbox({ id: 'gone-key' });
    await srv.run('echo x > f', { sandbox: a });
    await checkpoint(a.id, 'gone-key');
    const d = await dropCheckpoint(a.id, 'gone-key');
    assert.equal(d.status, 204);
    assert.equal((await srv.log()).requests.at(-1).headers['content-type'], 'application/json');
    await srv.api('DELETE', `/sandbox/${a.id}`);
    const b = await srv.createSandbox({ id: 'gone-key' });
    assert.equal((await srv.run('ls', { sandbox: b })).stdout.toString(), '');
    const again = await dropCheckpoint(b.id, 'gone-key');
    assert.equal(again.status, 404);
    assert.equal(again.json.error.type, 'not_found');
  });
  test('capture on a destroyed sandbox → 410 gone; missing id → 400', async () => {
    const a = await srv.createSandbox({ id: 'z' });
    assert.equal((await srv.api('POST', `/sandbox/${a.id}/checkpoint`, { json: {} })).status, 400);
    await srv.api('DELETE', `/sandbox/${a.id}`);
    const r = await checkpoint(a.id, 'z');
    assert.equal(r.status, 410);
    assert.equal(r.json.error.type, 'gone');
  });
  test('checkpoint_on_delete: teardown captures the recovery key first', async () => {
    await srv.setFaults({ checkpoint_on_delete: true });
    const a = await srv.createSandbox({ id: 'auto' });
    await srv.run('echo auto > f', { sandbox: a });
    await srv.api('DELETE', `/sandbox/${a.id}`);
    const b = await srv.createSandbox({ id: 'auto' });
    assert.equal((await srv.run('cat f', { sandbox: b })).stdout.toString(), 'auto\n');
  });
});

describe('idle timeout', () => {
  test('idleTimeoutMinutes destroys an idle sandbox (record kept with destroyedAt)', async () => {
    await srv.setFaults({ idle_ms_per_minute: 20 });
    const a = await srv.createSandbox({ idleTimeoutMinutes: 2 });
    const g = await waitFor(async () => {
      const r = await srv.api('GET', `/sandbox/${a.id}`);
      return r.json.destroyedAt ? r : null;
    }, 'idle destroy');
    assert.equal(g.status, 200);
    assert.equal((await srv.api('POST', `/sandbox/${a.id}/exec-lease`)).status, 410);
  });
  test('a running command keeps the sandbox alive', async () => {
    // Idle window 300 ms (generous against the lease→connect gap); the command
    // outlives it several times over.
    await srv.setFaults({ idle_ms_per_minute: 300 });
    const a = await srv.createSandbox({ idleTimeoutMinutes: 1 });
    const r = await srv.run('sleep 1; echo alive', { sandbox: a });
    assert.equal(r.stdout.toString(), 'alive\n');
  });
});
