// Test harness: start the server as the Lua specs do (child process, first
// stdout line `LISTENING <port>`, stdin kept open), and small clients for the
// REST routes and the exec WebSocket written from the spec text.
import { spawn } from 'node:child_process';
import { after, afterEach, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import WebSocket from 'ws';

export const SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'server.mjs');
export const TOKEN = 'test-token';
export const PROJECT = 'proj_123';
const BOUND_MS = 15_000; // anti-hang bound for every wait below

// The server a test file shares: started (with args) before its tests,
// reset after each one when reset is set, stopped after them all. The
// object returned stands for it once it has started.
export function fileServer(args = [], { reset = false } = {}) {
  let srv;
  before(async () => {
    srv = await startServer(args);
  });
  after(async () => {
    await srv.stop();
  });
  if (reset) afterEach(() => srv.admin('POST', 'reset'));
  return new Proxy({}, {
    get(_, key) {
      const v = srv[key];
      return typeof v === 'function' ? v.bind(srv) : v;
    },
  });
}

export async function startServer(args = [], { env } = {}) {
  const proc = spawn(process.execPath, [SERVER, '--port', '0', '--quiet', ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: env ?? process.env,
  });
  let stderr = '';
  proc.stderr.on('data', (d) => {
    stderr += d;
  });
  const firstLine = await new Promise((resolve, reject) => {
    let buf = '';
    const t = setTimeout(() => reject(new Error(`server did not start: ${stderr}`)), BOUND_MS);
    proc.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(t);
        resolve(buf.slice(0, nl));
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`server exited with ${code}: ${stderr}`));
    });
  });
  const m = /^LISTENING (\d+)$/.exec(firstLine);
  if (!m) throw new Error(`bad first line: ${firstLine}`);
  const port = Number(m[1]);
  const origin = `http://127.0.0.1:${port}`;
  const exited = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
  const srv = {
    proc,
    port,
    origin,
    exited,
    stderr: () => stderr,
    base: `${origin}/v1/railway/projects/${PROJECT}`,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.stdin.end();
      return exited;
    },
    api: (method, p, opts) => api(srv, method, p, opts),
    admin: async (method, p, body) => {
      const res = await fetch(`${origin}/__admin/${p}`, {
        method,
        headers: body !== undefined ? { 'content-type': 'application/json' } : {},
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, json: text ? JSON.parse(text) : undefined };
    },
    async setFaults(doc, merge = false) {
      const r = await srv.admin('POST', `faults${merge ? '?merge=1' : ''}`, doc);
      if (r.status !== 200) throw new Error(`faults rejected: ${JSON.stringify(r.json)}`);
      return r.json;
    },
    async log() {
      return (await srv.admin('GET', 'log')).json;
    },
    async state() {
      return (await srv.admin('GET', 'state')).json;
    },
    async createSandbox(body = {}) {
      const r = await srv.api('POST', '/sandbox', { json: { environmentId: 'env_1', env: {}, ...body } });
      if (r.status !== 201) throw new Error(`create failed: ${r.status} ${r.text}`);
      return r.json;
    },
    async lease(id) {
      const r = await srv.api('POST', `/sandbox/${encodeURIComponent(id)}/exec-lease`);
      if (r.status !== 200) throw new Error(`lease failed: ${r.status} ${r.text}`);
      return r.json;
    },
    // create → lease → one exec over the socket
    async run(command, opts = {}) {
      const sb = opts.sandbox ?? (await srv.createSandbox());
      const lease = await srv.lease(sb.id);
      return execWs(lease, { command, ...opts });
    },
  };
  return srv;
}

export async function api(srv, method, p, { json, body, token = TOKEN, headers = {}, base } = {}) {
  const h = { ...headers };
  if (token !== null) h.authorization = `Bearer ${token}`;
  let payload = body;
  if (json !== undefined) {
    payload = JSON.stringify(json);
    h['content-type'] = 'application/json';
  }
  const res = await fetch(`${base ?? srv.base}${p}`, { method, headers: h, body: payload });
  const buf = Buffer.from(await res.arrayBuffer());
  const text = buf.toString('utf8');
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, buf, json: parsed };
}

// Railway exec client per docs/protocols/platform.md §3.2, §3.3, §3.4. Returns everything observed.
// opts: command, cwd, env, protocols (override), stdin (Buffer|string sent as
// binary tag-0 frames before stdin_close), sendStdinClose (default true),
// closeOnExit (default true), onOpen(ws), onFrame(ws, frame), init (false = send nothing).
export function execWs(lease, opts = {}) {
  return new Promise((resolve, reject) => {
    const protocols = opts.protocols ?? [lease.subprotocol, lease.jwt];
    const ws = new WebSocket(lease.wsEndpoint, protocols, opts.wsOptions ?? {});
    const r = {
      opened: false,
      protocol: null,
      frames: [],
      exitCode: null,
      exitData: undefined,
      afterExit: [],
      closeCode: null,
      closeReason: null,
      httpStatus: null,
      httpBody: null,
      error: null,
    };
    const outChunks = [];
    const errChunks = [];
    // stdout/stderr are always current (callbacks may read them mid-stream).
    Object.defineProperty(r, 'stdout', { enumerable: true, get: () => Buffer.concat(outChunks) });
    Object.defineProperty(r, 'stderr', { enumerable: true, get: () => Buffer.concat(errChunks) });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('exec did not settle'));
    }, opts.boundMs ?? BOUND_MS);
    ws.on('unexpected-response', (req, res) => {
      r.httpStatus = res.statusCode;
      let b = '';
      res.on('data', (d) => {
        b += d;
      });
      res.on('end', () => {
        r.httpBody = b;
        clearTimeout(timer);
        resolve(r);
      });
    });
    ws.on('open', () => {
      r.opened = true;
      r.protocol = ws.protocol;
      if (opts.init !== false) {
        const data = { command: opts.command };
        if (opts.cwd) data.cwd = opts.cwd;
        if (opts.env && Object.keys(opts.env).length) data.env = opts.env;
        ws.send(JSON.stringify({ type: 'init_exec', data }));
        if (opts.stdin !== undefined) ws.send(Buffer.concat([Buffer.from([0]), Buffer.from(opts.stdin)]));
        if (opts.sendStdinClose !== false) ws.send(JSON.stringify({ type: 'stdin_close' }));
      }
      opts.onOpen?.(ws, r);
    });
    ws.on('message', (data, isBinary) => {
      const f = isBinary ? { binary: true, data: Buffer.from(data) } : { binary: false, text: data.toString('utf8') };
      if (r.exitData !== undefined) {
        r.afterExit.push(f);
        return;
      }
      r.frames.push(f);
      if (isBinary) {
        if (data.length > 1 && data[0] === 1) outChunks.push(data.subarray(1));
        else if (data.length > 1 && data[0] === 3) errChunks.push(data.subarray(1));
      } else {
        let msg;
        try {
          msg = JSON.parse(f.text);
        } catch {
          msg = undefined;
        }
        if (msg?.type === 'exit') {
          r.exitData = msg.data ?? null;
          r.exitCode = msg.data?.exit_code ?? 0;
          if (opts.closeOnExit !== false) ws.close(1000, '');
        }
      }
      opts.onFrame?.(ws, f, r);
    });
    ws.on('error', (e) => {
      r.error = e.message;
    });
    ws.on('close', (code, reason) => {
      r.closeCode = code;
      r.closeReason = reason.toString('utf8');
      clearTimeout(timer);
      resolve(r);
    });
  });
}

// Poll a condition (the server's log or state) with an anti-hang bound.
export async function waitFor(fn, what = 'condition', boundMs = BOUND_MS) {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// The ws log entry for a lease index once the server has seen its close.
export async function wsEntries(srv, n) {
  return waitFor(async () => {
    const log = await srv.log();
    return log.ws.length >= n && log.ws.every((e) => e.close || e.rejected !== undefined || e.stalled) ? log.ws : null;
  }, `${n} settled ws entries`);
}

// A small model of the client's direct-exec rule (docs/protocols/platform.md §2.5 and §3.5), used to
// show that the pinned scenarios are reachable with this server's switches.
export class DirectExecClient {
  constructor(srv, sandboxId) {
    this.srv = srv;
    this.sandboxId = sandboxId;
    this.lease = null;
    this.inflight = null;
  }

  async #getLease() {
    if (this.lease && this.lease.expiresAt && Date.parse(this.lease.expiresAt) - 60_000 > Date.now()) return this.lease;
    if (!this.inflight) {
      this.inflight = (async () => {
        const r = await this.srv.api('POST', `/sandbox/${encodeURIComponent(this.sandboxId)}/exec-lease`);
        if (r.status === 410) throw Object.assign(new Error('gone'), { status: 410 });
        if (r.status !== 200) throw Object.assign(new Error(`PlatformApiError ${r.status}`), { status: r.status, body: r.text });
        this.lease = r.json;
        return r.json;
      })().finally(() => {
        this.inflight = null;
      });
    }
    return this.inflight;
  }

  async exec(command) {
    let used = null;
    let last = null;
    for (let attempt = 1; attempt <= 2; attempt++) {
      if (attempt === 2 && this.lease === used) this.lease = null;
      let lease;
      try {
        lease = await this.#getLease();
      } catch (e) {
        if (e.status === 410) {
          this.lease = null;
          this.sandboxId = undefined;
          throw Object.assign(new Error('destroyed'), { name: 'SandboxDestroyedError', attempts: attempt, command });
        }
        throw e;
      }
      used = lease;
      last = await execWs(lease, { command });
      last.wsEndpoint = lease.wsEndpoint;
      if (last.exitCode !== null) return last;
    }
    if (this.lease === used) this.lease = null;
    throw Object.assign(new Error('transport'), {
      name: 'SandboxExecTransportError',
      sandboxId: this.sandboxId,
      command,
      attempts: 2,
      opened: last.opened,
      closeCode: last.closeCode,
      closeReason: last.closeReason,
      wsEndpoint: last.wsEndpoint,
    });
  }
}
