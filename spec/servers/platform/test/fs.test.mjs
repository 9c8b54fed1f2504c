// Bucket filesystem routes (docs/platform-filesystem.md).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileServer } from './harness.mjs';

const srv = fileServer([], { reset: true });

const fs = (method, key, opts) => srv.api(method, `/fs/dev-bucket/${key}`, opts);

describe('objects', () => {
  test('PUT with content-type, GET raw bytes back, HEAD metadata', async () => {
    const put = await fs('PUT', 'dir/file.txt', { body: 'hello', headers: { 'content-type': 'text/plain' } });
    assert.equal(put.status, 200);
    const log = (await srv.log()).requests.at(-1);
    assert.equal(log.path, '/v1/railway/projects/proj_123/fs/dev-bucket/dir/file.txt');
    assert.equal(log.route, 'fs_put');
    const get = await fs('GET', 'dir/file.txt');
    assert.equal(get.status, 200);
    assert.equal(get.text, 'hello');
    assert.equal(get.headers.get('content-type'), 'text/plain');
    const head = await fs('HEAD', 'dir/file.txt');
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), '5');
    assert.ok(!Number.isNaN(Date.parse(head.headers.get('last-modified'))));
    assert.equal(head.text, '');
  });
  test('binary content round-trips', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 254, 10]);
    await fs('PUT', 'bin', { body: bytes });
    assert.deepEqual((await fs('GET', 'bin')).buf, bytes);
  });
  test('missing object: GET → 404 not_found, HEAD → 404 without body', async () => {
    const g = await fs('GET', 'nope.txt');
    assert.equal(g.status, 404);
    assert.equal(g.json.error.type, 'not_found');
    const h = await fs('HEAD', 'nope.txt');
    assert.equal(h.status, 404);
    assert.equal(h.text, '');
  });
  test('if-none-match: * on an existing key → 412', async () => {
    await fs('PUT', 'a.txt', { body: 'a' });
    const r = await fs('PUT', 'a.txt', { body: 'b', headers: { 'if-none-match': '*' } });
    assert.equal(r.status, 412);
    assert.equal(r.json.error.type, 'precondition_failed');
    assert.equal((await fs('PUT', 'new.txt', { body: 'n', headers: { 'if-none-match': '*' } })).status, 200);
  });
  test('per-segment percent-encoding is decoded into the key', async () => {
    await fs('PUT', `${encodeURIComponent('dir with space')}/${encodeURIComponent('a&b.txt')}`, { body: 'x' });
    await fs('PUT', encodeURIComponent('why?.txt'), { body: 'y' });
    const st = await srv.state();
    assert.deepEqual(st.buckets['dev-bucket'], ['dir with space/a&b.txt', 'why?.txt']);
  });
  test('DELETE: 204, then 404; recursive on a prefix; non-recursive non-empty dir → 409', async () => {
    await fs('PUT', 'x.txt', { body: 'x' });
    assert.equal((await fs('DELETE', 'x.txt')).status, 204);
    assert.equal((await fs('DELETE', 'x.txt')).status, 404);
    await fs('POST', 'd/?op=mkdir');
    await fs('PUT', 'd/a', { body: '1' });
    await fs('PUT', 'd/e/b', { body: '2' });
    assert.equal((await fs('DELETE', 'd/?recursive=false')).status, 409);
    assert.equal((await fs('DELETE', 'd/?recursive=true')).status, 204);
    assert.deepEqual((await srv.state()).buckets['dev-bucket'], []);
  });
  test('copy and rename take {"destination": <key>}', async () => {
    await fs('PUT', 'a.txt', { body: 'A', headers: { 'content-type': 'text/plain' } });
    const c = await fs('POST', 'a.txt?op=copy', { json: { destination: 'b.txt' } });
    assert.equal(c.status, 200);
    assert.equal((await fs('GET', 'b.txt')).text, 'A');
    const r = await fs('POST', 'b.txt?op=rename', { json: { destination: 'sub/c.txt' } });
    assert.equal(r.status, 200);
    assert.equal((await fs('GET', 'b.txt')).status, 404);
    assert.equal((await fs('GET', 'sub/c.txt')).text, 'A');
    assert.equal((await fs('POST', 'zzz?op=copy', { json: { destination: 'q' } })).status, 404);
    assert.equal((await fs('POST', 'a.txt?op=copy', { json: {} })).status, 400);
    assert.equal((await fs('POST', 'a.txt?op=explode', { json: {} })).status, 400);
  });
  test('mkdir needs the trailing slash', async () => {
    assert.equal((await fs('POST', 'dir/?op=mkdir')).status, 200);
    assert.equal((await fs('HEAD', 'dir/')).status, 200);
    assert.equal((await fs('POST', 'dir2?op=mkdir')).status, 400);
  });
});

describe('listing', () => {
  test('prefix-only folder: delimiter listing at the bucket root', async () => {
    await fs('PUT', 'foo/bar.md', { body: 'abc' });
    await fs('PUT', 'top.txt', { body: 't' });
    const root = await fs('GET', '?delimiter=%2F');
    assert.equal(root.status, 200);
    assert.deepEqual(root.json.commonPrefixes, ['foo/']);
    assert.deepEqual(root.json.contents.map((c) => c.key), ['top.txt']);
    const sub = await fs('GET', '?delimiter=%2F&prefix=foo%2F');
    assert.deepEqual(sub.json.commonPrefixes, []);
    assert.equal(sub.json.contents.length, 1);
    assert.deepEqual({ key: sub.json.contents[0].key, size: sub.json.contents[0].size }, { key: 'foo/bar.md', size: 3 });
    assert.ok(!Number.isNaN(Date.parse(sub.json.contents[0].lastModified)));
    assert.equal((await fs('HEAD', 'foo')).status, 404, 'a prefix is not an object');
  });
  test('recursive listing (no delimiter) returns every key under the prefix', async () => {
    await fs('PUT', 'a/b/c', { body: '1' });
    await fs('PUT', 'a/d', { body: '2' });
    await fs('PUT', 'z', { body: '3' });
    const r = await fs('GET', '?prefix=a%2F');
    assert.deepEqual(r.json.contents.map((c) => c.key), ['a/b/c', 'a/d']);
    assert.deepEqual(r.json.commonPrefixes, []);
  });
  test('directory markers roll up into commonPrefixes; the prefix marker itself is content', async () => {
    await fs('POST', 'p/?op=mkdir');
    await fs('POST', 'p/q/?op=mkdir');
    const r = await fs('GET', '?delimiter=%2F&prefix=p%2F');
    assert.deepEqual(r.json.commonPrefixes, ['p/q/']);
    assert.deepEqual(r.json.contents.map((c) => c.key), ['p/']);
  });
});

describe('auth and faults apply to fs routes too', () => {
  test('401 without a token', async () => {
    assert.equal((await fs('GET', 'x', { token: null })).status, 401);
  });
  test('route "fs" matches every fs_* route', async () => {
    await srv.setFaults({ http: [{ route: 'fs', status: 503, times: 2 }] });
    assert.equal((await fs('PUT', 'x', { body: '1' })).status, 503);
    assert.equal((await fs('GET', 'x')).status, 503);
    assert.equal((await fs('PUT', 'x', { body: '1' })).status, 200);
  });
});
