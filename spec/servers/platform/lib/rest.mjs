// Sandbox, checkpoint, lease, legacy exec and template routes (docs/protocols/platform.md §2.4),
// all relative to /v1/railway/projects/{projectId}.
import { createHash } from 'node:crypto';
import { Store } from './store.mjs';
import { HttpError, emptyRes, errorRes, jsonRes, parseJsonBody } from './http_util.mjs';
import { buildEnv, resolveCwd, runCommand } from './runner.mjs';

const CREATE_KEYS = new Set([
  'id', 'seedCheckpointName', 'templateDefinition', 'templateBuildEnvs', 'environmentId',
  'idleTimeoutMinutes', 'networkIsolation', 'env',
]);

function isStringMap(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');
}

function isPlainObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function validateCreate(body, strict) {
  if (strict) {
    for (const k of Object.keys(body)) if (!CREATE_KEYS.has(k)) throw new HttpError(400, `Unknown field: ${k}`);
  }
  if (typeof body.environmentId !== 'string' || body.environmentId === '') throw new HttpError(400, 'environmentId is required');
  if (body.id !== undefined && (typeof body.id !== 'string' || body.id === '')) throw new HttpError(400, 'id must be a non-empty string');
  if (body.env !== undefined && !isStringMap(body.env)) throw new HttpError(400, 'env must be an object of strings');
  if (body.idleTimeoutMinutes !== undefined && !(typeof body.idleTimeoutMinutes === 'number' && body.idleTimeoutMinutes > 0)) {
    throw new HttpError(400, 'idleTimeoutMinutes must be a positive number');
  }
  if (body.networkIsolation !== undefined && body.networkIsolation !== 'ISOLATED' && body.networkIsolation !== 'PRIVATE') {
    throw new HttpError(400, 'networkIsolation must be ISOLATED or PRIVATE');
  }
  if (body.seedCheckpointName !== undefined && typeof body.seedCheckpointName !== 'string') throw new HttpError(400, 'seedCheckpointName must be a string');
  if (body.templateDefinition !== undefined && !isPlainObject(body.templateDefinition)) throw new HttpError(400, 'templateDefinition must be an object');
  if (body.templateBuildEnvs !== undefined && !isStringMap(body.templateBuildEnvs)) throw new HttpError(400, 'templateBuildEnvs must be an object of strings');
}

function liveSandbox(app, rq) {
  const sb = app.store.get(rq.projectId, rq.params.sandboxId);
  if (!sb) throw new HttpError(404, `Sandbox ${rq.params.sandboxId} not found`);
  return sb;
}

function recoveryKeyBody(body) {
  if (!body || typeof body.id !== 'string' || body.id === '') throw new HttpError(400, 'id is required');
  return body.id;
}

const templateId = (def) => `tpl_${createHash('sha256').update(JSON.stringify(def ?? null)).digest('hex').slice(0, 16)}`;

export const handlers = {
  async create(app, rq) {
    const body = parseJsonBody(rq.body, true);
    validateCreate(body, app.faults.strict_fields);
    const sb = await app.store.create(rq.projectId, body, { actingUserId: rq.headers['x-acting-user-id'] });
    app.store.touch(sb, app.faults.idle_ms_per_minute);
    return jsonRes(201, Store.view(sb));
  },

  async get(app, rq) {
    // A status read is not activity: it does not postpone the idle GC.
    return jsonRes(200, Store.view(liveSandbox(app, rq)));
  },

  async delete(app, rq) {
    const sb = liveSandbox(app, rq);
    await app.store.destroy(sb, { checkpoint: app.faults.checkpoint_on_delete });
    return emptyRes(204);
  },

  async lease(app, rq) {
    const sb = liveSandbox(app, rq);
    if (sb.destroyedAt) return errorRes(410, `Sandbox ${sb.id} was destroyed`);
    app.store.touch(sb, app.faults.idle_ms_per_minute);
    return jsonRes(200, app.mintLease(sb, { expired: rq.expiredLease }));
  },

  // Legacy HTTP exec (docs/protocols/platform.md §5): runs to completion and answers ExecResponse.
  async exec(app, rq) {
    const sb = liveSandbox(app, rq);
    if (sb.destroyedAt) return errorRes(410, `Sandbox ${sb.id} was destroyed`);
    const body = parseJsonBody(rq.body, true);
    if (typeof body.command !== 'string' || body.command === '') throw new HttpError(400, 'command is required');
    if (body.cwd !== undefined && typeof body.cwd !== 'string') throw new HttpError(400, 'cwd must be a string');
    if (body.env !== undefined && !isStringMap(body.env)) throw new HttpError(400, 'env must be an object of strings');
    if (body.timeoutSec !== undefined && !(typeof body.timeoutSec === 'number' && body.timeoutSec >= 0)) {
      throw new HttpError(400, 'timeoutSec must be a non-negative number');
    }
    app.store.touch(sb, app.faults.idle_ms_per_minute);
    const out = [];
    const err = [];
    let timedOut = false;
    const result = await new Promise((resolve) => {
      let timer = null;
      const h = runCommand({
        command: body.command,
        cwd: resolveCwd(sb.dir, body.cwd),
        env: buildEnv(sb, body.env),
        onStdout: (b) => out.push(b),
        onStderr: (b) => err.push(b),
        onExit: (r) => {
          sb.procs.delete(h);
          if (timer) clearTimeout(timer);
          resolve(r);
        },
      });
      sb.procs.add(h);
      if (h.pid) sb.pgids.add(h.pid);
      h.closeStdin();
      if (body.timeoutSec > 0) {
        timer = setTimeout(() => {
          timedOut = true;
          h.kill();
        }, body.timeoutSec * 1000);
      }
    });
    app.store.touch(sb, app.faults.idle_ms_per_minute);
    return jsonRes(200, {
      exitCode: timedOut ? null : result.exitCode,
      stdout: Buffer.concat(out).toString('utf8'),
      stderr: Buffer.concat(err).toString('utf8'),
      truncated: false,
      timedOut,
    });
  },

  async checkpoint(app, rq) {
    const sb = liveSandbox(app, rq);
    const key = recoveryKeyBody(parseJsonBody(rq.body, true));
    if (sb.destroyedAt) return errorRes(410, `Sandbox ${sb.id} was destroyed`);
    return jsonRes(200, await app.store.capture(sb, key));
  },

  async checkpoint_delete(app, rq) {
    liveSandbox(app, rq);
    const key = recoveryKeyBody(parseJsonBody(rq.body, true));
    if (!(await app.store.deleteCheckpoint(key))) return errorRes(404, `No checkpoint for id ${key}`);
    return emptyRes(204);
  },

  async template_build(app, rq) {
    const body = parseJsonBody(rq.body, true);
    if (typeof body.environmentId !== 'string' || body.environmentId === '') throw new HttpError(400, 'environmentId is required');
    if (!isPlainObject(body.templateDefinition)) throw new HttpError(400, 'templateDefinition is required');
    if (body.templateBuildEnvs !== undefined && !isStringMap(body.templateBuildEnvs)) throw new HttpError(400, 'templateBuildEnvs must be an object of strings');
    const id = templateId(body.templateDefinition);
    app.store.templates.set(id, { environmentId: body.environmentId, definition: body.templateDefinition, status: 'ready' });
    return jsonRes(202, { status: 'ready', templateId: id });
  },

  // PlatformTemplateClient: queued on create, then building, then ready on
  // successive polls, so a waitUntilReady loop is exercised.
  async template_create(app, rq) {
    const body = parseJsonBody(rq.body, true);
    if (typeof body.environmentId !== 'string' || body.environmentId === '') throw new HttpError(400, 'environmentId is required');
    if (!isPlainObject(body.definition)) throw new HttpError(400, 'definition is required');
    const id = templateId(body.definition);
    const t = app.store.templates.get(id) ?? { environmentId: body.environmentId, definition: body.definition, status: 'queued' };
    app.store.templates.set(id, t);
    return jsonRes(201, { templateId: id, status: t.status, error: null });
  },

  async template_get(app, rq) {
    const t = app.store.templates.get(rq.params.templateId);
    if (!t) return errorRes(404, `Template ${rq.params.templateId} not found`);
    const env = rq.query.get('environmentId');
    if (env !== null && env !== t.environmentId) return errorRes(404, `Template ${rq.params.templateId} not found`);
    if (t.status === 'queued') t.status = 'building';
    else if (t.status === 'building') t.status = 'ready';
    return jsonRes(200, { templateId: rq.params.templateId, status: t.status, error: null });
  },
};

// Segments after the project prefix (already percent-decoded) → route.
export function matchSandboxRoute(method, segs) {
  const [a, b, c] = segs;
  const n = segs.length;
  const m = (route, methods, params = {}) => (methods.includes(method) ? { route, params } : { allow: methods });
  if (a === 'sandbox') {
    if (n === 1) return m('create', ['POST']);
    if (n === 3 && b === 'templates' && c === 'builds') return m('template_build', ['POST']);
    if (n === 2) {
      if (method === 'GET') return { route: 'get', params: { sandboxId: b } };
      if (method === 'DELETE') return { route: 'delete', params: { sandboxId: b } };
      return { allow: ['GET', 'DELETE'] };
    }
    if (n === 3 && c === 'exec-lease') return m('lease', ['POST'], { sandboxId: b });
    if (n === 3 && c === 'exec') return m('exec', ['POST'], { sandboxId: b });
    if (n === 3 && c === 'checkpoint') {
      if (method === 'POST') return { route: 'checkpoint', params: { sandboxId: b } };
      if (method === 'DELETE') return { route: 'checkpoint_delete', params: { sandboxId: b } };
      return { allow: ['POST', 'DELETE'] };
    }
    return null;
  }
  if (a === 'templates') {
    if (n === 1) return m('template_create', ['POST']);
    if (n === 2) return m('template_get', ['GET'], { templateId: b });
  }
  return null;
}
