// The HTTP side: routing under /v1/railway/projects/{projectId}, bearer auth,
// fault injection, the request log, and the /__admin API.
import { echoEncode } from './echo.mjs';
import { ExecGateway, SUBPROTOCOL, WS_PATH } from './exec_ws.mjs';
import { FaultError, describeFaults, isTerminating, normalizeFaults, takeHttpRules } from './faults.mjs';
import { HTML_502, HttpError, errorRes, errorType, jsonRes, readBody, sendRes } from './http_util.mjs';
import { JwtSigner } from './jwt.mjs';
import { RequestLog, bodyForLog } from './reqlog.mjs';
import { handlers, matchSandboxRoute } from './rest.mjs';
import { fsHandlers, matchFsRoute } from './bucket.mjs';
import { Store } from './store.mjs';

const allHandlers = { ...handlers, ...fsHandlers };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function decodeSeg(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new HttpError(400, 'Malformed percent-encoding in path');
  }
}

// pathname → { projectId, route, params } | { error: descriptor }.
export function matchProxy(method, pathname, query, projectFilter) {
  const raw = pathname.split('/');
  // ['', 'v1', provider, 'projects', pid, ...rest]
  if (raw[1] !== 'v1') return { error: errorRes(404, 'Route not found') };
  if (raw[2] === 'projects') return { error: errorRes(404, 'Route not found (this server serves /v1/railway/projects/...)') };
  if (raw[3] !== 'projects' || raw.length < 6 || raw[4] === '') return { error: errorRes(404, 'Route not found') };
  if (raw[2] !== 'railway') return { error: errorRes(404, `Provider ${decodeSeg(raw[2])} is not supported by this server`) };
  const projectId = decodeSeg(raw[4]);
  if (projectFilter !== undefined && projectId !== projectFilter) return { projectId, error: errorRes(404, `Project ${projectId} not found`) };
  const rest = raw.slice(5);
  let m;
  if (rest[0] === 'fs') m = matchFsRoute(method, ['fs', ...rest.slice(1).map(decodeSeg)], query);
  else m = matchSandboxRoute(method, rest.map(decodeSeg));
  if (!m) return { projectId, error: errorRes(404, 'Route not found') };
  if (m.allow) return { projectId, error: { ...errorRes(405, `Method ${method} not allowed`), headers: { allow: m.allow.join(', ') } } };
  return { projectId, route: m.route, params: m.params };
}

// The JSON error body, with {token:enc} / {request:enc} placeholders of the
// message replaced by the bearer token / the raw request body, encoded.
function echoBody(status, rule, echo) {
  const parts = rule.message.split(/(\{(?:token|request):[a-z_0-9]+\})/);
  const inner = parts.map((p) => {
    const m = /^\{(token|request):([a-z_0-9]+)\}$/.exec(p);
    if (!m) return JSON.stringify(p).slice(1, -1);
    return echoEncode(m[1] === 'token' ? echo.token : echo.request, m[2]);
  }).join('');
  const type = JSON.stringify(rule.error_type ?? errorType(status));
  return `{"error":{"message":"${inner}","type":${type}}}`;
}

function synthesize(rule, sandboxId, echo) {
  const status = rule.status ?? (rule.body === 'html' ? 502 : 200);
  const headers = { ...(rule.headers ?? {}) };
  if (rule.json !== undefined) return { status, json: rule.json, headers };
  const kind = rule.body ?? (status >= 400 ? 'json' : 'empty');
  if (kind === 'json' && typeof rule.message === 'string' && /\{(token|request):/.test(rule.message)) {
    return { status, raw: echoBody(status, rule, echo), headers: { 'content-type': 'application/json', ...headers } };
  }
  switch (kind) {
    case 'endless':
      return { status, endless: true, declaredLength: rule.declared_length, headers: { 'content-type': 'application/json', ...headers } };
    case 'html':
      return { status, raw: HTML_502, headers: { 'content-type': 'text/html', ...headers } };
    case 'malformed':
      return { status, raw: '{"error": {"message": "unterminated', headers: { 'content-type': 'application/json', ...headers } };
    case 'empty':
      return { status, headers };
    case 'text':
      return { status, raw: rule.text ?? 'error', headers: { 'content-type': 'text/plain', ...headers } };
    default: {
      let message = rule.message;
      if (message === undefined) message = status === 410 && sandboxId ? `Sandbox ${sandboxId} was destroyed` : 'Injected fault';
      return { status, json: { error: { message, type: rule.error_type ?? errorType(status) } }, headers };
    }
  }
}

// Keep the real status, cut the JSON body in half: "2xx but unparseable".
function corrupt(d) {
  const text = d.json !== undefined ? JSON.stringify(d.json) : d.raw !== undefined ? String(d.raw) : '';
  const cut = text.length > 1 ? text.slice(0, Math.floor(text.length / 2)) : '{"';
  const status = d.status === 204 ? 200 : d.status;
  return { status, raw: cut, headers: { ...d.headers, 'content-type': 'application/json' } };
}

export class App {
  constructor({ token, stateDir, startFaults, projectId, quiet, scheme }) {
    this.token = token;
    this.projectFilter = projectId;
    this.quiet = quiet;
    this.scheme = scheme;
    this.startFaults = startFaults;
    this.faults = normalizeFaults(startFaults);
    this.store = new Store(stateDir);
    this.log = new RequestLog();
    this.jwt = new JwtSigner();
    this.gateway = new ExecGateway(this);
    this.port = 0;
  }

  info(line) {
    if (!this.quiet) process.stderr.write(`[platform] ${line}\n`);
  }

  wsEndpoint() {
    return `${this.scheme === 'https' ? 'wss' : 'ws'}://127.0.0.1:${this.port}${WS_PATH}`;
  }

  mintLease(sb, { expired = false } = {}) {
    const index = ++this.store.leaseCount;
    const now = Date.now();
    const ttl = expired ? -1000 : this.faults.lease_ttl_ms;
    const noExp = this.faults.lease_expires_at_null && !expired;
    const payload = { sub: sb.id, rid: sb.providerResourceId, prj: sb.projectId, lix: index, jti: `lease_${index}`, iat: now / 1000 };
    if (!noExp) payload.exp = (now + ttl) / 1000;
    return {
      provider: 'railway',
      sandboxId: sb.id,
      providerResourceId: sb.providerResourceId,
      jwt: this.jwt.sign(payload),
      wsEndpoint: this.wsEndpoint(),
      subprotocol: SUBPROTOCOL,
      expiresAt: noExp ? null : new Date(now + ttl).toISOString(),
    };
  }

  authState(header) {
    if (header === undefined) return 'missing';
    const m = /^Bearer (.+)$/i.exec(header);
    if (!m) return 'invalid';
    return m[1] === this.token ? 'ok' : 'invalid';
  }

  async handle(req, res) {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (url.pathname.startsWith('/__admin/')) return this.#admin(req, res, url);
    const t0 = Date.now();
    const entry = this.log.addRequest({
      method: req.method,
      url: req.url,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: { ...req.headers },
    });
    const finish = (d, note) => {
      sendRes(req, res, d);
      entry.status = d.status;
      if (d.json !== undefined) entry.response = d.json;
      else if (d.raw !== undefined) entry.response_bytes = Buffer.byteLength(d.raw);
      if (note) entry.note = note;
      entry.duration_ms = Date.now() - t0;
      this.info(`${req.method} ${url.pathname} -> ${d.status}`);
    };
    let body;
    try {
      // bucket objects may be large (an object store takes GiB-sized PUTs)
      const isFsPut = req.method === 'PUT' && /^\/v1\/[^/]+\/projects\/[^/]+\/fs\//.test(url.pathname);
      body = await readBody(req, isFsPut ? 1024 * 1024 * 1024 : undefined);
    } catch (e) {
      return finish(errorRes(e.status ?? 400, e.message));
    }
    entry.body = bodyForLog(body, req.headers['content-type']);
    let m;
    try {
      m = matchProxy(req.method, url.pathname, url.searchParams, this.projectFilter);
    } catch (e) {
      return finish(errorRes(e.status ?? 400, e.message));
    }
    entry.route = m.route ?? 'unknown';
    entry.project_id = m.projectId ?? null;
    entry.sandbox_id = m.params?.sandboxId ?? null;
    const rules = takeHttpRules(this.faults, { route: entry.route, method: req.method, sandboxId: entry.sandbox_id });
    entry.faults = rules.map((r) => ({ route: r.route, status: r.status, body: r.body, delay_ms: r.delay_ms || undefined, drop: r.drop || undefined, expired: r.expired || undefined }));
    const delay = rules.reduce((a, r) => a + r.delay_ms, 0);
    if (delay > 0) await sleep(delay);
    entry.auth = this.authState(req.headers.authorization);
    if (entry.auth !== 'ok') {
      return finish(errorRes(401, entry.auth === 'missing' ? 'Missing bearer token' : 'Invalid access token'));
    }
    if (rules.some((r) => r.drop)) {
      entry.status = 'dropped';
      entry.duration_ms = Date.now() - t0;
      req.socket.destroy();
      return undefined;
    }
    if (m.error) return finish(m.error);
    const inject = rules.find(isTerminating);
    if (inject) {
      const echo = { token: /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '', request: body.toString('utf8') };
      const d = synthesize(inject, entry.sandbox_id, echo);
      if (d.endless) return this.#endless(req, res, d, entry, t0);
      return finish(d, 'injected');
    }
    let d;
    try {
      d = await allHandlers[m.route](this, {
        projectId: m.projectId,
        params: m.params,
        body,
        query: url.searchParams,
        headers: req.headers,
        expiredLease: rules.some((r) => r.expired),
      });
    } catch (e) {
      if (e instanceof HttpError) d = errorRes(e.status, e.message, e.type);
      else {
        this.info(`internal error on ${m.route}: ${e.stack ?? e}`);
        d = errorRes(500, 'Internal server error');
      }
    }
    if (rules.some((r) => r.body === 'malformed')) return finish(corrupt(d), 'malformed');
    return finish(d);
  }

  // A body that never ends (a hostile or broken proxy): chunks as fast as
  // the client reads them, until it hangs up; at most 60 s or 8 GiB so that
  // the server stops by itself.
  #endless(req, res, d, entry, t0) {
    const headers = { ...d.headers };
    if (d.declaredLength !== undefined) headers['content-length'] = String(d.declaredLength);
    res.writeHead(d.status, headers);
    entry.status = d.status;
    entry.note = 'endless';
    const chunk = Buffer.from(`{"items":[${'"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",'.repeat(1024)}`);
    let sent = 0;
    const stopAt = Date.now() + 60_000;
    const pump = () => {
      while (!res.destroyed && sent < 8 * 1024 ** 3 && Date.now() < stopAt) {
        sent += chunk.length;
        entry.response_bytes = sent;
        if (!res.write(chunk)) return res.once('drain', pump);
      }
      entry.duration_ms = Date.now() - t0;
      res.destroy();
      return undefined;
    };
    res.on('close', () => { entry.duration_ms = Date.now() - t0; });
    pump();
  }

  async #admin(req, res, url) {
    const send = (d) => sendRes(req, res, d);
    let body;
    try {
      const buf = await readBody(req);
      body = buf.length ? JSON.parse(buf.toString('utf8')) : undefined;
    } catch {
      return send(errorRes(400, 'Malformed JSON body'));
    }
    const p = url.pathname;
    const m = req.method;
    try {
      if (m === 'GET' && p === '/__admin/log') {
        return send(jsonRes(200, this.log.since(Number(url.searchParams.get('since') ?? 0))));
      }
      if (m === 'GET' && p === '/__admin/faults') return send(jsonRes(200, describeFaults(this.faults)));
      if (m === 'POST' && p === '/__admin/faults') {
        const doc = body ?? {};
        const add = normalizeFaults(doc);
        if (url.searchParams.get('merge') === '1') {
          // Keep existing rules (and their counters); append new rules and
          // override only the settings named in the body.
          const next = { ...this.faults, http: [...this.faults.http, ...add.http], ws: [...this.faults.ws, ...add.ws] };
          for (const k of Object.keys(doc)) if (k !== 'http' && k !== 'ws') next[k] = add[k];
          this.faults = next;
        } else {
          this.faults = add;
        }
        this.info('faults updated');
        return send(jsonRes(200, describeFaults(this.faults)));
      }
      if (m === 'POST' && p === '/__admin/reset') {
        this.gateway.closeAll();
        this.store.reset();
        this.log.reset();
        this.faults = normalizeFaults(this.startFaults);
        return send(jsonRes(200, { ok: true }));
      }
      if (m === 'GET' && p === '/__admin/state') return send(jsonRes(200, this.store.describe()));
      if (m === 'POST' && p === '/__admin/revoke-leases') {
        this.store.revokedBefore = this.store.leaseCount;
        return send(jsonRes(200, { revoked_through: this.store.revokedBefore }));
      }
      const dm = /^\/__admin\/sandboxes\/([^/]+)\/destroy$/.exec(p);
      if (m === 'POST' && dm) {
        const sb = this.store.sandboxes.get(decodeURIComponent(dm[1]));
        if (!sb) return send(errorRes(404, 'Sandbox not found'));
        await this.store.destroy(sb);
        return send(jsonRes(200, Store.view(sb)));
      }
    } catch (e) {
      if (e instanceof FaultError) return send(errorRes(400, e.message));
      return send(errorRes(500, String(e.message ?? e)));
    }
    return send(errorRes(404, 'Unknown admin route'));
  }
}
