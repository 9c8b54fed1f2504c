// Bucket filesystem routes (docs/platform-filesystem.md): an in-memory object store with S3-like
// listing (prefix + delimiter) and directory marker keys ending in '/'.
import { createHash } from 'node:crypto';
import { HttpError, emptyRes, errorRes, jsonRes, parseJsonBody } from './http_util.mjs';

export function matchFsRoute(method, segs, query) {
  // segs = ['fs', bucket, ...keySegments]; a trailing '' means a trailing '/'.
  if (segs.length < 2 || segs[1] === '') return null;
  const params = { bucket: segs[1], key: segs.slice(2).join('/') };
  const dirish = params.key === '' || params.key.endsWith('/');
  if (method === 'GET') return { route: dirish ? 'fs_list' : 'fs_get', params };
  if (method === 'HEAD') return { route: 'fs_head', params };
  if (method === 'PUT') return { route: 'fs_put', params };
  if (method === 'DELETE') return { route: 'fs_delete', params };
  if (method === 'POST') {
    const op = query.get('op');
    if (op === 'copy') return { route: 'fs_copy', params };
    if (op === 'rename') return { route: 'fs_rename', params };
    if (op === 'mkdir') return { route: 'fs_mkdir', params };
    return { route: 'fs_bad_op', params };
  }
  return { allow: ['GET', 'HEAD', 'PUT', 'DELETE', 'POST'] };
}

function objectHeaders(o) {
  return {
    'content-type': o.contentType,
    'last-modified': o.lastModified.toUTCString(),
    etag: `"${createHash('md5').update(o.body).digest('hex')}"`,
  };
}

function put(bucket, key, body, contentType) {
  bucket.set(key, { body, contentType, lastModified: new Date() });
}

function destKey(body) {
  if (!body || typeof body.destination !== 'string' || body.destination === '') throw new HttpError(400, 'destination is required');
  return body.destination.replace(/^\/+/, '');
}

export const fsHandlers = {
  async fs_get(app, rq) {
    const o = app.store.bucket(rq.params.bucket).get(rq.params.key);
    if (!o) return errorRes(404, `Object ${rq.params.key} not found`);
    return { status: 200, raw: o.body, headers: objectHeaders(o) };
  },

  async fs_head(app, rq) {
    const o = app.store.bucket(rq.params.bucket).get(rq.params.key);
    if (!o) return emptyRes(404);
    return { status: 200, raw: o.body, headers: objectHeaders(o) };
  },

  async fs_list(app, rq) {
    const bucket = app.store.bucket(rq.params.bucket);
    const prefix = rq.query.get('prefix') ?? rq.params.key;
    const delimiter = rq.query.get('delimiter') || undefined;
    const contents = [];
    const prefixes = new Set();
    for (const key of [...bucket.keys()].sort()) {
      if (!key.startsWith(prefix)) continue;
      const rest = key.slice(prefix.length);
      const cut = delimiter ? rest.indexOf(delimiter) : -1;
      if (cut >= 0) {
        // S3 semantics: everything below the next delimiter (including
        // directory markers) rolls up into one common prefix.
        prefixes.add(prefix + rest.slice(0, cut + delimiter.length));
        continue;
      }
      const o = bucket.get(key);
      contents.push({ key, size: o.body.length, lastModified: o.lastModified.toISOString() });
    }
    return jsonRes(200, { contents, commonPrefixes: [...prefixes] });
  },

  async fs_put(app, rq) {
    if (rq.params.key === '') throw new HttpError(400, 'Object key is required');
    const bucket = app.store.bucket(rq.params.bucket);
    if (rq.headers['if-none-match'] === '*' && bucket.has(rq.params.key)) return errorRes(412, `Object ${rq.params.key} already exists`);
    put(bucket, rq.params.key, rq.body, rq.headers['content-type'] ?? 'application/octet-stream');
    return jsonRes(200, { key: rq.params.key, size: rq.body.length });
  },

  async fs_delete(app, rq) {
    const bucket = app.store.bucket(rq.params.bucket);
    const key = rq.params.key;
    const recursive = rq.query.get('recursive') === 'true';
    if (key.endsWith('/') || key === '') {
      const under = [...bucket.keys()].filter((k) => k.startsWith(key));
      if (under.length === 0) return errorRes(404, `Object ${key} not found`);
      const children = under.filter((k) => k !== key);
      if (children.length > 0 && !recursive) return errorRes(409, `Directory ${key} is not empty`);
      for (const k of under) bucket.delete(k);
      return emptyRes(204);
    }
    if (!bucket.delete(key)) return errorRes(404, `Object ${key} not found`);
    return emptyRes(204);
  },

  async fs_copy(app, rq) {
    const bucket = app.store.bucket(rq.params.bucket);
    const dest = destKey(parseJsonBody(rq.body, true));
    const o = bucket.get(rq.params.key);
    if (!o) return errorRes(404, `Object ${rq.params.key} not found`);
    put(bucket, dest, o.body, o.contentType);
    return jsonRes(200, { key: dest });
  },

  async fs_rename(app, rq) {
    const bucket = app.store.bucket(rq.params.bucket);
    const dest = destKey(parseJsonBody(rq.body, true));
    const o = bucket.get(rq.params.key);
    if (!o) return errorRes(404, `Object ${rq.params.key} not found`);
    bucket.delete(rq.params.key);
    put(bucket, dest, o.body, o.contentType);
    return jsonRes(200, { key: dest });
  },

  async fs_mkdir(app, rq) {
    const key = rq.params.key;
    if (key === '' || !key.endsWith('/')) throw new HttpError(400, 'mkdir needs a key ending in /');
    const bucket = app.store.bucket(rq.params.bucket);
    if (!bucket.has(key)) put(bucket, key, Buffer.alloc(0), 'application/x-directory');
    return jsonRes(200, { key });
  },

  async fs_bad_op() {
    throw new HttpError(400, 'Unknown op (expected copy, rename or mkdir)');
  },
};
