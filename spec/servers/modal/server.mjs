#!/usr/bin/env node
// Reference (fake) Modal server for sandkit's tests: the sandbox part of the
// control plane (modal.client.ModalClient) and the task command router
// (modal.task_command_router.TaskCommandRouter) on ONE 127.0.0.1 port,
// plaintext HTTP/2 (h2c), real command execution as local processes.
// Behaviour follows docs/protocols/modal.md and is proven against
// the official npm SDK modal@0.7.6 by test/sdk.test.mjs. README.md documents
// flags, faults and the admin API.
//
// Layout of the state dir:
//   sandboxes/<sb-id>/fs   the sandbox filesystem: the root its processes see
//                          and the upper layers of its system directories
//                          (view.mjs), default cwd /
//   sandboxes/<sb-id>/ovl  the overlays' work directories; fstab: its mounts
//   images/<im-id>         filesystem snapshots (copies of a sandbox fs)

import { spawn, execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import {
  checkLauncher, findExecutable, launchArgv, prepareRoot, removeSandboxDir, startView, stopSpare, stopView, unlockOverlayWork,
} from './view.mjs';
import { echoEncode } from '../shared/echo_encode.mjs';

const execFileP = promisify(execFile);
const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROTO = path.resolve(HERE, '../../../src/core/providers/modal/third_party/modal.proto');
const Status = grpc.status;

// ------------------------------------------------------------------ flags --

function usage() {
  return `usage: node server.mjs [--port N] [--admin-port N] [--state-dir DIR]
  [--token-id ID] [--token-secret SECRET] [--token-ttl SECONDS]
  [--auth-token-optional] [--isolation none|bwrap] [--default-environment NAME]
  [--router-url URL] [--no-stdin-exit] [--host ADDR] [--tls-cert PEM --tls-key PEM]
  [--faults JSON] [--fault-unavailable N[:RPC]] [--fault-cut-stream BYTES[:COUNT]]
  [--fault-delay-ms MS[:RPC]]
(expiring tokens at start-up: --token-ttl; revoking issued ones: the admin API)`;
}

function parseArgs(argv) {
  const o = {
    port: 0, adminPort: 0, stateDir: null, tokenId: 'ak-test', tokenSecret: 'as-test',
    tokenTtl: 3600, authTokenOptional: false, isolation: 'none', defaultEnv: 'main',
    routerUrl: null, stdinExit: true, faults: {}, host: '127.0.0.1', tlsCert: null, tlsKey: null,
  };
  const need = (i) => {
    if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value\n${usage()}`);
    return argv[i + 1];
  };
  const rpcPart = (v) => { const k = v.indexOf(':'); return k < 0 ? [v, '*'] : [v.slice(0, k), v.slice(k + 1)]; };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    switch (a) {
      case '--port': o.port = Number(need(i)); i++; break;
      case '--admin-port': o.adminPort = Number(need(i)); i++; break;
      case '--state-dir': o.stateDir = need(i); i++; break;
      case '--token-id': o.tokenId = need(i); i++; break;
      case '--token-secret': o.tokenSecret = need(i); i++; break;
      case '--token-ttl': o.tokenTtl = Number(need(i)); i++; break;
      case '--auth-token-optional': o.authTokenOptional = true; break;
      case '--isolation': o.isolation = need(i); i++; break;
      case '--default-environment': o.defaultEnv = need(i); i++; break;
      case '--router-url': o.routerUrl = need(i); i++; break;
      case '--no-stdin-exit': o.stdinExit = false; break;
      case '--host': o.host = need(i); i++; break;
      case '--tls-cert': o.tlsCert = need(i); i++; break;
      case '--tls-key': o.tlsKey = need(i); i++; break;
      case '--faults': Object.assign(o.faults, JSON.parse(need(i))); i++; break;
      case '--fault-unavailable': {
        const [n, rpc] = rpcPart(need(i)); i++;
        (o.faults.unavailable ??= []).push({ count: Number(n), rpc });
        break;
      }
      case '--fault-cut-stream': {
        const [b, c] = rpcPart(need(i)); i++;
        o.faults.cut_stream = { after_bytes: Number(b), count: c === '*' ? 1 : Number(c) };
        break;
      }
      case '--fault-delay-ms': {
        const [ms, rpc] = rpcPart(need(i)); i++;
        o.faults.delay = { ms: Number(ms), rpc };
        break;
      }
      case '-h': case '--help': process.stdout.write(usage() + '\n'); process.exit(0); break;
      default: throw new Error(`unknown argument ${a}\n${usage()}`);
    }
  }
  if (!['none', 'bwrap'].includes(o.isolation)) throw new Error('--isolation must be none or bwrap');
  if (!o.tlsCert !== !o.tlsKey) throw new Error('--tls-cert and --tls-key go together');
  if (!/^127\./.test(o.host)) throw new Error('--host must be a loopback address (127.x.y.z)');
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const log = (...a) => process.stderr.write(`[modal-server] ${a.join(' ')}\n`);

// ------------------------------------------------------------------ state --

const ownStateDir = !opts.stateDir;
const stateDir = opts.stateDir
  ? path.resolve(opts.stateDir)
  : fs.mkdtempSync(path.join(os.tmpdir(), 'sandkit-modal-'));
fs.mkdirSync(path.join(stateDir, 'sandboxes'), { recursive: true });
fs.mkdirSync(path.join(stateDir, 'images'), { recursive: true });
{
  const why = await checkLauncher(opts.isolation, stateDir);
  if (why) {
    process.stderr.write(`modal server: --isolation ${opts.isolation}: ${why}\n`);
    if (ownStateDir) fs.rmSync(stateDir, { recursive: true, force: true });
    process.exit(2);
  }
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
function newId(prefix) {
  // sb-/ta-/ap-/im-/st- + 22 base62: the real server's V1 id shape, which
  // SDK 0.7.6 sandboxes.fromId() validates.
  const bytes = crypto.randomBytes(22);
  let s = '';
  for (const b of bytes) s += BASE62[b % 62];
  return `${prefix}-${s}`;
}

const apps = new Map();        // `${env}\0${name}` -> app ; app_id -> app via appsById
const appsById = new Map();
const images = new Map();      // image_id -> { id, kind: 'registry'|'snapshot', tag?, dir? }
const imageByRecipe = new Map();
const secrets = new Map();     // secret_id -> { env }
const namedSecrets = new Map();
const sandboxes = new Map();   // sandbox_id -> Sandbox
const tasks = new Map();       // task_id -> Sandbox
const snapshotsById = new Map(); // snapshot_id (client uuid) -> Promise<image_id>
const idempotent = new Map();  // `${method}\0${x-idempotency-key}` -> response
let faults = {};
let revokedBeforeMs = 0;
let callLog = [];
let callSeq = 0;
const startMs = Date.now();

function resetFaults(initial) {
  faults = { unavailable: [], cut_stream: null, delay: null, token_ttl_s: null, exec_exit: null, drop_status: null };
  if (initial) applyFaults(initial);
}

// Merge a faults JSON body into the live fault state (keys absent: kept;
// a key set to null: cleared).
function applyFaults(body) {
  if (!body || typeof body !== 'object') throw new Error('faults body must be a JSON object');
  for (const [k, v] of Object.entries(body)) {
    switch (k) {
      case 'unavailable': case 'fail': {
        if (v === null) { faults.unavailable = []; break; }
        const list = Array.isArray(v) ? v : [v];
        for (const f of list) {
          faults.unavailable.push({
            rpc: f.rpc ?? '*', count: Number(f.count ?? 1),
            code: Number(f.code ?? Status.UNAVAILABLE),
            message: String(f.message ?? 'injected fault: service unavailable'),
            after: !!f.after,
          });
        }
        break;
      }
      case 'cut_stream':
        faults.cut_stream = v === null ? null : {
          after_bytes: Number(v.after_bytes ?? 0), count: Number(v.count ?? 1),
          mode: v.mode === 'rst' ? 'rst' : 'status', code: Number(v.code ?? Status.UNAVAILABLE),
          fd: v.fd ?? 'any',
        };
        break;
      case 'delay': case 'delay_ms':
        if (v === null) faults.delay = null;
        else if (typeof v === 'number') faults.delay = { ms: v, rpc: '*', count: null };
        else faults.delay = { ms: Number(v.ms ?? 0), rpc: v.rpc ?? '*', count: v.count == null ? null : Number(v.count) };
        break;
      case 'expire_tokens':
        // One-shot action: every token issued before now is expired.
        if (v) revokedBeforeMs = Date.now() + 1;
        break;
      case 'token_ttl_s':
        faults.token_ttl_s = v === null ? null : Number(v);
        break;
      case 'drop_status':
        // A unary answer whose stream ends after the message, without
        // trailers (no grpc-status): what libcurl 7.88 makes of an answer
        // that ends while another stream holds nghttp2 paused
        // (docs/reliability.md §"Lost trailers").
        faults.drop_status = v === null ? null : { rpc: v.rpc ?? '*', count: Number(v.count ?? 1) };
        break;
      case 'exec_exit':
        // A lying router: every exec reports this exit ({code} or {signal}).
        faults.exec_exit = v === null ? null
          : v.signal != null ? { signal: Number(v.signal) } : { code: Number(v.code ?? 0) };
        break;
      default:
        throw new Error(`unknown fault key: ${k}`);
    }
  }
}

// A careless server's error message: {token_id:<enc>}, {token_secret:<enc>},
// {auth_token:<enc>}, {router_jwt:<enc>} and {request:<enc>} placeholders
// become the caller's credentials, tokens or request (as JSON), in the
// encoding named (../shared/echo_encode.mjs).
function echoMessage(message, call) {
  return message.replace(/\{(token_id|token_secret|auth_token|router_jwt|request):([a-z_0-9]+)\}/g, (_, what, enc) => {
    let v;
    if (what === 'request') v = JSON.stringify(call.request ?? {});
    else if (what === 'router_jwt') v = mdGet(call, 'authorization').replace(/^Bearer /, '');
    else v = mdGet(call, { token_id: 'x-modal-token-id', token_secret: 'x-modal-token-secret', auth_token: 'x-modal-auth-token' }[what]);
    return echoEncode(v, enc);
  });
}

function publicFaults() {
  return { ...faults, expired_tokens_before_ms: revokedBeforeMs || null };
}

// ------------------------------------------------------------------- JWTs --

const jwtKey = crypto.randomBytes(32);
// Standard base64 without padding: SDK 0.7.6 decodes the auth token payload
// with atob(), which rejects the URL-safe alphabet (docs/protocols/modal.md §1.5).
const b64 = (buf) => Buffer.from(buf).toString('base64').replace(/=+$/, '');

function issueJwt(claims) {
  const ttl = faults.token_ttl_s ?? opts.tokenTtl;
  const now = Date.now();
  const payload = { ...claims, iat: Math.floor(now / 1000), exp: Math.ceil((now + ttl * 1000) / 1000), iat_ms: now, jti: crypto.randomUUID() };
  const head = b64(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const body = b64(JSON.stringify(payload));
  const sig = b64(crypto.createHmac('sha256', jwtKey).update(`${head}.${body}`).digest());
  return `${head}.${body}.${sig}`;
}

// Returns the claims, or a string saying why the token is not acceptable.
function checkJwt(token, typ) {
  const parts = String(token).split('.');
  if (parts.length !== 3) return 'malformed token';
  const sig = b64(crypto.createHmac('sha256', jwtKey).update(`${parts[0]}.${parts[1]}`).digest());
  if (sig !== parts[2]) return 'invalid token signature';
  let claims;
  try { claims = JSON.parse(Buffer.from(parts[1], 'base64').toString('utf8')); } catch { return 'malformed token'; }
  if (claims.typ !== typ) return 'wrong token type';
  if (Date.now() >= claims.exp * 1000 || claims.iat_ms < revokedBeforeMs) return 'token expired';
  return claims;
}

// ------------------------------------------------------------ gRPC helpers --

class RpcError extends Error {
  constructor(code, message) { super(message); this.code = code; this.details = message; }
}
const fail = (code, msg) => { throw new RpcError(code, msg); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Metadata values that are safe to show in the admin log (never token
// secrets, auth tokens or bearer JWTs).
const LOGGED_VALUES = new Set([
  'x-modal-client-type', 'x-modal-client-version', 'x-modal-libmodal-version',
  'x-idempotency-key', 'x-retry-attempt', 'x-retry-delay', 'x-throttle-retry-attempt',
  'x-throttle-retry-delay', 'user-agent', 'grpc-timeout', 'grpc-accept-encoding',
  'grpc-encoding', 'content-type', 'te',
]);
// Request fields shown in the admin log; env values and stdin data never are.
const LOGGED_FIELDS = [
  'app_name', 'environment_name', 'object_creation_type', 'sandbox_id', 'sandbox_name',
  'task_id', 'exec_id', 'offset', 'file_descriptor', 'timeout', 'image_id', 'app_id',
  'snapshot_id', 'ttl_seconds', 'command_args', 'workdir', 'timeout_secs', 'stdout_config',
  'stderr_config', 'last_entry_id', 'deployment_name', 'eof',
];

function summarizeRequest(req) {
  const out = {};
  if (!req || typeof req !== 'object') return out;
  for (const f of LOGGED_FIELDS) if (req[f] !== undefined) out[f] = req[f];
  if (req.env && Object.keys(req.env).length) out.env_keys = Object.keys(req.env).sort();
  if (req.env_dict && Object.keys(req.env_dict).length) out.env_dict_keys = Object.keys(req.env_dict).sort();
  if (req.secret_ids?.length) out.secret_ids = req.secret_ids;
  if (req.data?.length) out.data_len = req.data.length;
  const d = req.definition;
  if (d) {
    out.definition = {
      name: d.name, image_id: d.image_id, timeout_secs: d.timeout_secs, workdir: d.workdir,
      entrypoint_args: d.entrypoint_args, secret_ids: d.secret_ids, idle_timeout_secs: d.idle_timeout_secs,
    };
  }
  if (req.image) out.dockerfile_commands = req.image.dockerfile_commands;
  if (req.file_exec_request_oneof) out.op = req.file_exec_request_oneof; // never the data or path
  return out;
}

function logCall(service, method, call) {
  const md = call.metadata.getMap();
  const entry = {
    seq: ++callSeq, t_ms: Date.now() - startMs, service, rpc: method,
    path: `/${service}/${method}`, metadata_keys: Object.keys(md).sort(), metadata: {},
    request: summarizeRequest(call.request), code: null, fault: null,
    peer: call.getPeer(), // the client's address:port: one per connection
  };
  for (const [k, v] of Object.entries(md)) if (LOGGED_VALUES.has(k)) entry.metadata[k] = String(v);
  callLog.push(entry);
  if (callLog.length > 20000) callLog.splice(0, callLog.length - 20000);
  return entry;
}

const mdGet = (call, key) => { const v = call.metadata.get(key); return v.length ? String(v[0]) : ''; };

function matchRpc(spec, method) {
  return spec === '*' || spec === method || spec.endsWith(`/${method}`);
}

async function preamble(service, method, call, entry) {
  const d = faults.delay;
  if (d && d.ms > 0 && matchRpc(d.rpc, method) && (d.count == null || d.count > 0)) {
    if (d.count != null) d.count--;
    entry.fault = 'delay';
    await sleep(d.ms);
  }
  const f = faults.unavailable.find((x) => x.count > 0 && matchRpc(x.rpc, method));
  if (f && !f.after) {
    f.count--;
    entry.fault = f.code === Status.UNAVAILABLE ? 'unavailable' : `fail:${f.code}`;
    fail(f.code, echoMessage(f.message, call));
  }
  authenticate(service, method, call);
  return f && f.after ? f : null;
}

function authenticate(service, method, call) {
  if (service === 'modal.client.ModalClient') {
    if (mdGet(call, 'x-modal-token-id') !== opts.tokenId || mdGet(call, 'x-modal-token-secret') !== opts.tokenSecret) {
      fail(Status.UNAUTHENTICATED, 'Invalid token id or token secret');
    }
    if (method === 'AuthTokenGet') return;
    const tok = mdGet(call, 'x-modal-auth-token');
    if (!tok) {
      if (opts.authTokenOptional) return;
      fail(Status.UNAUTHENTICATED, 'missing x-modal-auth-token (call AuthTokenGet first)');
    }
    const c = checkJwt(tok, 'auth');
    if (typeof c === 'string') fail(Status.UNAUTHENTICATED, `x-modal-auth-token rejected: ${c}`);
    return;
  }
  const h = mdGet(call, 'authorization');
  const m = /^Bearer (.+)$/.exec(h);
  if (!m) fail(Status.UNAUTHENTICATED, 'missing authorization: Bearer <jwt>');
  const c = checkJwt(m[1], 'router');
  if (typeof c === 'string') fail(Status.UNAUTHENTICATED, `router jwt rejected: ${c}`);
  if (call.request?.task_id && c.task !== call.request.task_id) {
    fail(Status.PERMISSION_DENIED, 'router jwt was issued for another task');
  }
}

const toStatus = (e) => (e instanceof RpcError
  ? { code: e.code, details: e.details }
  : { code: Status.INTERNAL, details: `internal error: ${e?.message ?? e}` });

// Control-plane unary calls are de-duplicated by x-idempotency-key for the
// mutating methods, as a real server must be for a client that retries.
const IDEMPOTENT = new Set(['SandboxCreate', 'SandboxTerminate', 'SecretGetOrCreate', 'AppGetOrCreate', 'ImageGetOrCreate', 'SandboxSnapshotFs']);

function wrapUnary(service, method, fn) {
  return (call, callback) => {
    const entry = logCall(service, method, call);
    (async () => {
      const after = await preamble(service, method, call, entry);
      const key = mdGet(call, 'x-idempotency-key');
      const ikey = IDEMPOTENT.has(method) && key ? `${method}\0${key}` : null;
      let res;
      if (ikey && idempotent.has(ikey)) res = idempotent.get(ikey);
      else {
        res = await fn(call.request, call);
        if (ikey) {
          idempotent.set(ikey, res);
          if (idempotent.size > 5000) idempotent.delete(idempotent.keys().next().value);
        }
      }
      if (after) {
        // The work is done but the answer is "lost": tests idempotency.
        after.count--;
        entry.fault = 'unavailable-after';
        fail(after.code, after.message);
      }
      return res;
    })().then((res) => {
      entry.code = 0;
      const drop = faults.drop_status;
      if (drop && drop.count > 0 && matchRpc(drop.rpc, method) && endWithoutStatus(call, res)) {
        drop.count--;
        entry.fault = 'drop_status';
        return;
      }
      callback(null, res);
    }, (e) => {
      const st = toStatus(e);
      entry.code = st.code;
      if (!(e instanceof RpcError)) log(`${method} failed:`, e?.stack ?? e);
      callback(st);
    });
  };
}

function wrapStream(service, method, fn) {
  return (call) => {
    const entry = logCall(service, method, call);
    let cancelled = false;
    call.on('cancelled', () => { cancelled = true; });
    const ctx = {
      entry,
      get cancelled() { return cancelled || call.cancelled; },
      // Resolves false once the client is gone.
      write: (msg) => new Promise((resolve) => {
        if (ctx.cancelled) return resolve(false);
        if (call.write(msg)) return resolve(true);
        const done = () => { call.off('drain', done); call.off('cancelled', done); resolve(!ctx.cancelled); };
        call.on('drain', done);
        call.on('cancelled', done);
      }),
    };
    (async () => {
      await preamble(service, method, call, entry);
      await fn(call.request, call, ctx);
    })().then(() => {
      if (entry.code === null) entry.code = 0;
      if (!ctx.cancelled) call.end();
    }, (e) => {
      const st = toStatus(e);
      entry.code = st.code;
      if (!(e instanceof RpcError)) log(`${method} failed:`, e?.stack ?? e);
      if (!ctx.cancelled) call.emit('error', st);
    });
  };
}

// The grpc-js call that owns the HTTP/2 stream of a server call.
function baseCall(call) {
  let c = call.call;
  for (let i = 0; c && i < 5 && !c.stream; i++) c = c.nextCall;
  return c?.stream ? c : null;
}

// Answer a unary call with its message and end the HTTP/2 stream there,
// with no trailers (so no grpc-status). Returns false if the stream could
// not be found or its headers already went out.
function endWithoutStatus(call, res) {
  const c = baseCall(call);
  if (!c || c.metadataSent || typeof c.serializeMessage !== 'function') return false;
  c.metadataSent = true; // grpc-js sends nothing more on it
  c.stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto' }, { waitForTrailers: false });
  c.stream.end(c.serializeMessage(res));
  return true;
}

// Abort the HTTP/2 stream under a grpc-js server call (RST_STREAM), to
// emulate a connection cut. Returns false if the stream could not be found.
function resetStream(call) {
  const c = baseCall(call);
  if (!c?.stream?.close) return false;
  c.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
  return true;
}

// ------------------------------------------------------------- sandboxes --

const GS = { UNSPECIFIED: 0, SUCCESS: 1, FAILURE: 2, TERMINATED: 3, TIMEOUT: 4, INIT_FAILURE: 5, INTERNAL_FAILURE: 6, IDLE_TIMEOUT: 7 };
const normEnv = (e) => (e ? e : opts.defaultEnv);

// Append-only byte log of one stdio stream, readable from any offset.
class OutBuf {
  constructor() { this.chunks = []; this.starts = []; this.length = 0; this.eof = false; }
  push(b) { if (!b.length) return; this.starts.push(this.length); this.chunks.push(b); this.length += b.length; }
  read(off, max) {
    if (off >= this.length) return Buffer.alloc(0);
    let lo = 0; let hi = this.starts.length - 1;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (this.starts[mid] <= off) lo = mid; else hi = mid - 1; }
    const parts = []; let n = 0;
    for (let i = lo; i < this.chunks.length && n < max; i++) {
      const s = i === lo ? off - this.starts[i] : 0;
      const piece = this.chunks[i].subarray(s, s + (max - n));
      parts.push(piece); n += piece.length;
    }
    return parts.length === 1 ? parts[0] : Buffer.concat(parts, n);
  }
}

// A tiny broadcast condition: waiters resolve on the next notify().
class Cond {
  constructor() { this.w = []; }
  wait(ms) {
    return new Promise((resolve) => {
      let t = null;
      const fn = () => { if (t) clearTimeout(t); resolve(); };
      this.w.push(fn);
      if (ms != null) t = setTimeout(() => { this.w = this.w.filter((x) => x !== fn); resolve(); }, ms);
    });
  }
  notify() { const w = this.w; this.w = []; for (const f of w) f(); }
}

function killGroup(child, sig = 'SIGKILL') {
  if (!child || child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  try { process.kill(-child.pid, sig); } catch { try { child.kill(sig); } catch { /* gone */ } }
}

function sandboxFsDir(sb) { return path.join(stateDir, 'sandboxes', sb.id, 'fs'); }

function baseEnv(sb) {
  return {
    PATH: process.env.PATH || '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: '/root',
    MODAL_SANDBOX_ID: sb.id,
    MODAL_TASK_ID: sb.taskId,
  };
}

function secretEnv(ids) {
  const env = {};
  for (const id of ids ?? []) {
    const s = secrets.get(id);
    if (!s) fail(Status.NOT_FOUND, `Secret ${id} not found`);
    Object.assign(env, s.env);
  }
  return env;
}

// A workdir is a path of the sandbox's own filesystem (relative: to the
// sandbox's cwd); the launcher creates it when missing, as Modal does.
function resolveWorkdir(sb, wd) {
  if (!wd) return sb.cwd;
  return path.posix.resolve(sb.cwd, wd);
}

function spawnIn(sb, argv, { cwd, env, stdin, stdout, stderr, mergeStderr }) {
  let cmd = argv;
  if (!findExecutable(sb.view, cwd, argv[0], env.PATH)) {
    // What a shell says (exit 127), in both isolation modes; a launcher
    // would report its own execvp failure instead.
    cmd = ['/bin/sh', '-c', 'printf "%s: command not found\\n" "$1" >&2; exit 127', 'sh', argv[0]];
    if (mergeStderr) cmd = ['/bin/sh', '-c', 'exec "$@" 2>&1', 'sh', ...cmd];
    return spawn(cmd[0], cmd.slice(1), { cwd: '/', env, detached: true, stdio: [stdin, stdout, stderr] });
  }
  if (mergeStderr) cmd = ['/bin/sh', '-c', 'exec "$@" 2>&1', 'sh', ...argv];
  cmd = launchArgv(opts.isolation, sb.view, cwd, cmd);
  return spawn(cmd[0], cmd.slice(1), { cwd: '/', env, detached: true, stdio: [stdin, stdout, stderr] });
}

function finishSandbox(sb, result) {
  if (sb.result) return;
  sb.result = result;
  clearTimeout(sb.timeoutTimer);
  clearTimeout(sb.idleTimer);
  if (sb.name) {
    const key = `${sb.appId}\0${sb.name}`;
    if (namesInUse.get(key) === sb.id) namesInUse.delete(key);
  }
  killGroup(sb.entry);
  for (const ex of sb.execs.values()) killGroup(ex.child);
  stopView(sb.view);
  sb.cond.notify();
  log(`sandbox ${sb.id} finished: status ${result.status}`);
  // Drop the filesystem once its processes are gone.
  const dir = path.join(stateDir, 'sandboxes', sb.id);
  setTimeout(() => removeSandboxDir(dir, () => {}), 200).unref();
}

function touchIdle(sb) {
  if (sb.idleSecs == null || sb.result) return;
  clearTimeout(sb.idleTimer);
  const running = [...sb.execs.values()].some((e) => !e.exit);
  if (running) return;
  sb.idleTimer = setTimeout(() => finishSandbox(sb, { status: GS.IDLE_TIMEOUT }), sb.idleSecs * 1000);
  sb.idleTimer.unref?.();
}

const namesInUse = new Map(); // `${app_id}\0${name}` -> sandbox_id (running only)

async function createSandbox(req) {
  const app = appsById.get(req.app_id);
  if (!app) fail(Status.NOT_FOUND, `App ${req.app_id} not found`);
  const def = req.definition ?? {};
  const image = images.get(def.image_id);
  if (!image) fail(Status.NOT_FOUND, `Image ${def.image_id || '(none)'} not found`);
  const name = def.name ?? '';
  if (name) {
    if (!/^[a-zA-Z0-9._-]{1,64}$/.test(name)) fail(Status.INVALID_ARGUMENT, `Invalid sandbox name '${name}'`);
    if (namesInUse.has(`${app.id}\0${name}`)) {
      fail(Status.ALREADY_EXISTS, `Sandbox with name '${name}' already exists in App '${app.name}'`);
    }
  }
  const sb = {
    id: newId('sb'), taskId: newId('ta'), appId: app.id, appName: app.name, env: app.env, name,
    imageId: image.id, createdMs: Date.now(), result: null, execs: new Map(), cond: new Cond(),
    timeoutSecs: def.timeout_secs || 300, idleSecs: def.idle_timeout_secs ?? null,
    entry: null, timeoutTimer: null, idleTimer: null, view: null,
  };
  sb.fsDir = sandboxFsDir(sb);
  sb.secretEnv = secretEnv(def.secret_ids);
  if (name) namesInUse.set(`${app.id}\0${name}`, sb.id);
  sandboxes.set(sb.id, sb);
  tasks.set(sb.taskId, sb);
  try {
    fs.mkdirSync(sb.fsDir, { recursive: true });
    if (image.kind === 'snapshot') await execFileP('cp', ['-a', `${image.dir}/.`, sb.fsDir]);
    prepareRoot(sb.fsDir);
    sb.view = await startView(opts.isolation, path.dirname(sb.fsDir), sb.fsDir);
    if (sb.result) stopView(sb.view); // terminated while its view was being built
    // the launcher creates it at first use (an exec or a file operation)
    sb.cwd = def.workdir ? resolveWorkdir(sb, def.workdir) : '/';
  } catch (e) {
    finishSandbox(sb, { status: GS.INIT_FAILURE, exception: String(e.message) });
    throw e;
  }
  sb.timeoutTimer = setTimeout(() => finishSandbox(sb, { status: GS.TIMEOUT }), sb.timeoutSecs * 1000);
  sb.timeoutTimer.unref?.();
  if (def.entrypoint_args?.length) {
    const child = spawnIn(sb, def.entrypoint_args, {
      cwd: sb.cwd, env: { ...baseEnv(sb), ...sb.secretEnv }, stdin: 'ignore', stdout: 'ignore', stderr: 'ignore',
    });
    sb.entry = child;
    child.on('error', (e) => finishSandbox(sb, { status: GS.FAILURE, exitcode: 127, exception: e.message }));
    child.on('exit', (code, sig) => {
      const exitcode = code ?? 128 + (os.constants.signals[sig] ?? 0);
      finishSandbox(sb, exitcode === 0 ? { status: GS.SUCCESS, exitcode: 0 } : { status: GS.FAILURE, exitcode });
    });
  }
  touchIdle(sb);
  log(`sandbox ${sb.id} created (name '${name}', app '${app.name}', image ${image.id})`);
  return sb;
}

function getSandbox(id) {
  const sb = sandboxes.get(id);
  if (!sb) fail(Status.NOT_FOUND, `Sandbox ${id} not found`);
  return sb;
}

function getTask(taskId) {
  const sb = tasks.get(taskId);
  if (!sb) fail(Status.NOT_FOUND, `Task ${taskId} not found`);
  return sb;
}

function liveTask(taskId) {
  const sb = getTask(taskId);
  if (sb.result) fail(Status.NOT_FOUND, `Task ${taskId} has finished; the sandbox is no longer running`);
  return sb;
}

function getExec(sb, execId) {
  const ex = sb.execs.get(execId);
  if (!ex) fail(Status.NOT_FOUND, `Exec ${execId} not found in task ${sb.taskId}`);
  return ex;
}

async function snapshotFs(sb) {
  const id = newId('im');
  const dir = path.join(stateDir, 'images', id);
  fs.mkdirSync(dir, { recursive: true });
  await execFileP('cp', ['-a', `${sb.fsDir}/.`, dir]);
  images.set(id, { id, kind: 'snapshot', dir, from: sb.id });
  log(`snapshot ${id} of ${sb.id}`);
  return id;
}

// ------------------------------------------------------------------ execs --

function startExec(sb, req) {
  const argv = req.command_args ?? [];
  if (!argv.length) fail(Status.INVALID_ARGUMENT, 'command_args must not be empty');
  const env = { ...baseEnv(sb), ...sb.secretEnv, ...secretEnv(req.secret_ids), ...(req.env ?? {}) };
  const cwd = resolveWorkdir(sb, req.workdir);
  const outPipe = req.stdout_config === 1;
  const errCfg = req.stderr_config ?? 0; // 0 devnull, 1 pipe, 2 merge into stdout
  const ex = {
    id: req.exec_id, argv, child: null, out: new OutBuf(), err: new OutBuf(), exit: null,
    cond: new Cond(), stdinOffset: 0, stdinEof: false, timer: null, startedMs: Date.now(),
  };
  if (!outPipe) ex.out.eof = true;
  if (errCfg !== 1) ex.err.eof = true;
  sb.execs.set(ex.id, ex);
  clearTimeout(sb.idleTimer);
  const child = spawnIn(sb, argv, {
    cwd, env, stdin: 'pipe', stdout: outPipe || errCfg === 2 ? 'pipe' : 'ignore',
    stderr: errCfg === 1 ? 'pipe' : 'ignore', mergeStderr: errCfg === 2 && outPipe,
  });
  ex.child = child;
  child.stdin.on('error', () => {});
  const setExit = (x) => {
    if (ex.exit) return;
    ex.exit = faults.exec_exit ? { ...faults.exec_exit } : x;
    clearTimeout(ex.timer);
    ex.cond.notify();
    touchIdle(sb);
  };
  const pipeTo = (stream, buf) => {
    if (!stream) return;
    stream.on('data', (d) => { buf.push(d); ex.cond.notify(); });
    stream.on('end', () => { buf.eof = true; ex.cond.notify(); });
    stream.on('error', () => { buf.eof = true; ex.cond.notify(); });
  };
  if (outPipe) pipeTo(child.stdout, ex.out);
  else if (child.stdout) child.stdout.resume();
  if (errCfg === 1) pipeTo(child.stderr, ex.err);
  child.on('error', (e) => {
    // Spawn failure (e.g. no such executable): report it the way a shell
    // would, so the client sees output and an exit code rather than a hang.
    const code = e.code === 'ENOENT' ? 127 : 126;
    if (errCfg === 1) ex.err.push(Buffer.from(`${argv[0]}: ${e.code === 'ENOENT' ? 'command not found' : e.message}\n`));
    ex.out.eof = true; ex.err.eof = true;
    setExit({ code });
  });
  child.on('exit', (code, sig) => {
    setExit(sig ? { signal: os.constants.signals[sig] ?? 9 } : { code: code ?? 0 });
  });
  if (req.timeout_secs) {
    ex.timer = setTimeout(() => killGroup(child), req.timeout_secs * 1000);
    ex.timer.unref?.();
  }
  return ex;
}

// ---------------------------------------------------- container filesystem --
// Sandbox.open() and SandboxFile (docs/modal-filesystem.md). Each operation
// runs a small shell script inside the sandbox's own view (view.mjs), so a
// path or a symlink means what it means to the sandbox's commands and can
// never reach the host. Operations of one sandbox run one at a time, in the
// order they arrived; a handle is a path, a mode and a position.

const SEC = { PERM: 1, NOENT: 2, IO: 5, ACCES: 13, EXIST: 17, NOTDIR: 20, ISDIR: 21, INVAL: 22 };
const FS_CHUNK = 1 << 20; // bytes per output entry and batch
const FS_MODES = new Set(['r', 'w', 'a', 'r+', 'w+', 'a+']);
// Exit codes of the scripts below are errno values.
const FS_CHECK = `
  p=$1
  [ -d "$p" ] && exit ${SEC.ISDIR}
  d=$(dirname -- "$p")
  [ -d "$d" ] || { [ -e "$d" ] && exit ${SEC.NOTDIR}; exit ${SEC.NOENT}; }`;
const FS_SCRIPTS = {
  open_r: `${FS_CHECK}
  [ -e "$p" ] || exit ${SEC.NOENT}
  [ -r "$p" ] || exit ${SEC.ACCES}`,
  open_w: `${FS_CHECK}
  : > "$p" 2>/dev/null || exit ${SEC.ACCES}`,
  open_a: `${FS_CHECK}
  : >> "$p" 2>/dev/null || exit ${SEC.ACCES}`,
  read: `[ -e "$1" ] || exit ${SEC.NOENT}
  if [ -n "$3" ]; then tail -c +"$2" -- "$1" | head -c "$3"; else tail -c +"$2" -- "$1"; fi`,
  write_at: `[ -e "$1" ] || exit ${SEC.NOENT}
  dd of="$1" oflag=seek_bytes seek="$2" conv=notrunc status=none 2>/dev/null || exit ${SEC.IO}`,
  append: `[ -e "$1" ] || exit ${SEC.NOENT}
  cat >> "$1" || exit ${SEC.IO}`,
};

class FsError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

function fsErrorFor(code, what, p) {
  const text = {
    [SEC.NOENT]: 'No such file or directory', [SEC.ACCES]: 'Permission denied',
    [SEC.ISDIR]: 'Is a directory', [SEC.NOTDIR]: 'Not a directory',
  }[code];
  return new FsError(text ? code : SEC.IO, `${what} ${p}: ${text ?? `failed (exit ${code})`}`);
}

// Runs `script` (sh -c) with args inside the view; resolves { code, out }.
function fsRun(sb, script, args, input) {
  return new Promise((resolve, reject) => {
    const child = spawnIn(sb, ['/bin/sh', '-c', script, 'sh', ...args], {
      cwd: sb.cwd, env: baseEnv(sb), stdin: input ? 'pipe' : 'ignore', stdout: 'pipe', stderr: 'ignore',
    });
    const out = [];
    child.stdout.on('data', (d) => out.push(d));
    child.on('error', reject);
    child.on('close', (code, sig) => resolve({ code: sig ? SEC.IO : code, out: Buffer.concat(out) }));
    if (input) {
      child.stdin.on('error', () => {});
      child.stdin.end(input);
    }
  });
}

function fsHandle(sb, fd) {
  const h = sb.files.get(fd ?? '');
  if (!h) throw new FsError(SEC.INVAL, `File descriptor ${fd} is not open`);
  return h;
}

async function fsOperate(sb, req, fd) {
  const op = req.file_exec_request_oneof;
  if (op === 'file_open_request') {
    const { path: p = '', mode = 'r' } = req.file_open_request;
    if (!p) throw new FsError(SEC.INVAL, 'open: a path is required');
    const m = mode.replace('b', '');
    if (!FS_MODES.has(m)) throw new FsError(SEC.INVAL, `open: invalid mode ${JSON.stringify(mode)}`);
    const abs = path.posix.resolve(sb.cwd, p);
    const r = await fsRun(sb, FS_SCRIPTS[`open_${m[0]}`], [abs]);
    if (r.code !== 0) throw fsErrorFor(r.code, 'open', p);
    sb.files.set(fd, { path: abs, name: p, mode: m, pos: 0 });
    return [];
  }
  if (op === 'file_read_request') {
    const h = fsHandle(sb, req.file_read_request.file_descriptor);
    if (h.mode === 'w' || h.mode === 'a') throw new FsError(SEC.INVAL, `read ${h.name}: not open for reading`);
    const n = req.file_read_request.n;
    const r = await fsRun(sb, FS_SCRIPTS.read, [h.path, String(h.pos + 1), n == null ? '' : String(n)]);
    if (r.code !== 0) throw fsErrorFor(r.code, 'read', h.name);
    h.pos += r.out.length;
    return [r.out];
  }
  if (op === 'file_write_request') {
    const h = fsHandle(sb, req.file_write_request.file_descriptor);
    if (h.mode === 'r') throw new FsError(SEC.INVAL, `write ${h.name}: not open for writing`);
    const data = req.file_write_request.data ?? Buffer.alloc(0);
    if (data.length) {
      const append = h.mode[0] === 'a';
      const r = await fsRun(sb, append ? FS_SCRIPTS.append : FS_SCRIPTS.write_at,
        append ? [h.path] : [h.path, String(h.pos)], data);
      if (r.code !== 0) throw fsErrorFor(r.code, 'write', h.name);
      if (!append) h.pos += data.length;
    }
    return [];
  }
  if (op === 'file_flush_request') {
    fsHandle(sb, req.file_flush_request.file_descriptor);
    return [];
  }
  if (op === 'file_close_request') {
    fsHandle(sb, req.file_close_request.file_descriptor);
    sb.files.delete(req.file_close_request.file_descriptor);
    return [];
  }
  throw new FsError(SEC.INVAL, `unsupported filesystem operation ${op ?? '(none)'}`);
}

// Starts an operation; its result (output or error) is kept for
// ContainerFilesystemExecGetOutput, which may be called again (the SDK
// retries on an error batch).
function fsStart(sb, req) {
  sb.files ??= new Map();
  sb.fsExecs ??= new Map();
  sb.fsQueue ??= Promise.resolve();
  const id = newId('fe');
  const fd = req.file_exec_request_oneof === 'file_open_request'
    ? (req.file_open_request.file_descriptor || newId('fd')) : undefined;
  const fx = { id, done: false, output: [], error: null, cond: new Cond() };
  sb.fsExecs.set(id, fx);
  fsExecIndex.set(id, sb);
  sb.fsQueue = sb.fsQueue.then(() => fsOperate(sb, req, fd)).then((out) => { fx.output = out; }, (e) => {
    fx.error = e instanceof FsError ? { error_code: e.code, error_message: e.message }
      : { error_code: SEC.IO, error_message: String(e?.message ?? e) };
  }).then(() => { fx.done = true; fx.cond.notify(); });
  return { exec_id: id, ...(fd ? { file_descriptor: fd } : {}) };
}
const fsExecIndex = new Map(); // exec id -> sandbox

// ------------------------------------------------------- control handlers --

const control = {
  async ContainerFilesystemExec(req) {
    return fsStart(liveTask(req.task_id ?? ''), req);
  },

  async AuthTokenGet() {
    return { token: issueJwt({ typ: 'auth', sub: opts.tokenId }) };
  },

  async AppGetOrCreate(req) {
    const name = req.app_name ?? '';
    const env = normEnv(req.environment_name);
    const type = req.object_creation_type ?? 0;
    if (type === 5 || type === 4) { // ephemeral / anonymous: always a new app
      const app = { id: newId('ap'), name, env };
      appsById.set(app.id, app);
      return { app_id: app.id };
    }
    const key = `${env}\0${name}`;
    let app = apps.get(key);
    if (app && type === 2) fail(Status.ALREADY_EXISTS, `App '${name}' already exists`);
    if (!app) {
      if (type === 0) fail(Status.NOT_FOUND, `App '${name}' not found in environment '${env}'`);
      if (!name) fail(Status.INVALID_ARGUMENT, 'app_name must not be empty');
      app = { id: newId('ap'), name, env };
      apps.set(key, app);
      appsById.set(app.id, app);
    }
    return { app_id: app.id };
  },

  async SecretGetOrCreate(req) {
    const type = req.object_creation_type ?? 0;
    const dict = req.env_dict ?? {};
    if (req.deployment_name && type !== 5) {
      const key = `${normEnv(req.environment_name)}\0${req.deployment_name}`;
      let id = namedSecrets.get(key);
      if (!id) {
        if (type === 0) fail(Status.NOT_FOUND, `Secret '${req.deployment_name}' not found`);
        id = newId('st');
        secrets.set(id, { env: { ...dict } });
        namedSecrets.set(key, id);
      } else if (type === 3) secrets.set(id, { env: { ...dict } });
      for (const k of req.required_keys ?? []) {
        if (!(k in secrets.get(id).env)) fail(Status.FAILED_PRECONDITION, `Secret is missing key: ${k}`);
      }
      return { secret_id: id };
    }
    const id = newId('st');
    secrets.set(id, { env: { ...dict } });
    return { secret_id: id };
  },

  async ImageGetOrCreate(req) {
    const img = req.image ?? {};
    const cmds = img.dockerfile_commands ?? [];
    const bases = img.base_images ?? [];
    const recipe = JSON.stringify([cmds, bases.map((b) => [b.docker_tag, b.image_id])]);
    let id = imageByRecipe.get(recipe);
    if (!id) {
      // No real builds: the FROM tag is recorded, other commands ignored;
      // a layer on top of a snapshot image keeps the snapshot's files.
      const base = bases.length ? images.get(bases[0].image_id) : null;
      if (bases.length && !base) fail(Status.NOT_FOUND, `Base image ${bases[0].image_id} not found`);
      const from = /^FROM\s+(\S+)/i.exec(cmds[0] ?? '');
      id = newId('im');
      images.set(id, base?.kind === 'snapshot'
        ? { id, kind: 'snapshot', dir: base.dir, tag: base.tag }
        : { id, kind: 'registry', tag: from ? from[1] : '' });
      imageByRecipe.set(recipe, id);
    }
    return { image_id: id, result: { status: GS.SUCCESS } };
  },

  async SandboxCreate(req) {
    const sb = await createSandbox(req);
    return { sandbox_id: sb.id };
  },

  async SandboxGetFromName(req) {
    const env = normEnv(req.environment_name);
    const app = apps.get(`${env}\0${req.app_name ?? ''}`);
    const notFound = `Sandbox with name '${req.sandbox_name}' not found in App '${req.app_name}'`;
    if (!app) fail(Status.NOT_FOUND, notFound);
    const id = namesInUse.get(`${app.id}\0${req.sandbox_name ?? ''}`);
    if (!id) fail(Status.NOT_FOUND, notFound);
    return { sandbox_id: id };
  },

  async SandboxGetTaskId(req) {
    const sb = getSandbox(req.sandbox_id);
    if (sb.result) return { task_result: sb.result };
    return { task_id: sb.taskId };
  },

  async TaskGetCommandRouterAccess(req) {
    liveTask(req.task_id);
    return { jwt: issueJwt({ typ: 'router', task: req.task_id }), url: routerUrl };
  },

  async SandboxTerminate(req) {
    const sb = getSandbox(req.sandbox_id);
    const existing = sb.result;
    finishSandbox(sb, { status: GS.TERMINATED });
    return existing ? { existing_result: existing } : {};
  },

  async SandboxWait(req, call) {
    const sb = getSandbox(req.sandbox_id);
    const timeoutMs = Math.max(0, Math.min(Number(req.timeout ?? 0), 300) * 1000);
    const deadline = Date.now() + timeoutMs;
    let gone = false;
    call.on('cancelled', () => { gone = true; sb.cond.notify(); });
    while (!sb.result && !gone && Date.now() < deadline) await sb.cond.wait(deadline - Date.now());
    return sb.result ? { result: sb.result } : {};
  },

  async SandboxSnapshotFs(req) {
    const sb = getSandbox(req.sandbox_id);
    if (sb.result) fail(Status.FAILED_PRECONDITION, `Sandbox ${sb.id} is not running`);
    const image_id = await snapshotFs(sb);
    return { image_id, result: { status: GS.SUCCESS } };
  },
};

const controlStreams = {
  async ContainerFilesystemExecGetOutput(req, call, ctx) {
    const sb = fsExecIndex.get(req.exec_id ?? '');
    const fx = sb?.fsExecs.get(req.exec_id);
    if (!fx) fail(Status.NOT_FOUND, `Filesystem exec ${req.exec_id} not found`);
    call.on('cancelled', () => fx.cond.notify());
    const limitMs = Math.min(Number(req.timeout) > 0 ? Number(req.timeout) : 55, 55) * 1000;
    const deadline = Date.now() + limitMs;
    // Not finished within the call's timeout: the stream ends without eof
    // and the client asks again.
    while (!fx.done && !ctx.cancelled && Date.now() < deadline) await fx.cond.wait(deadline - Date.now());
    if (!fx.done || ctx.cancelled) return;
    let index = 0;
    let sent = 0;
    for (const out of fx.output) {
      for (let off = 0; off < out.length; off += FS_CHUNK) {
        // cut_stream with fd "fs" (or "any"): fail once after_bytes went out
        const cut = faults.cut_stream;
        if (cut && cut.count > 0 && (cut.fd === 'any' || cut.fd === 'fs') && sent >= cut.after_bytes) {
          cut.count--;
          ctx.entry.fault = `cut_stream:${cut.mode}`;
          if (cut.mode === 'rst' && resetStream(call)) { ctx.entry.code = 'rst'; return; }
          fail(cut.code, 'injected fault: stream cut');
        }
        const data = out.subarray(off, off + FS_CHUNK);
        sent += data.length;
        if (!(await ctx.write({ output: [data], batch_index: ++index }))) return;
      }
    }
    if (fx.error) {
      await ctx.write({ error: fx.error, batch_index: ++index });
    } else if (await ctx.write({ eof: true, batch_index: ++index })) {
      sb.fsExecs.delete(fx.id); // delivered: its output is not kept
      fsExecIndex.delete(fx.id);
    }
  },

  async ImageJoinStreaming(req, call, ctx) {
    if (!images.has(req.image_id)) fail(Status.NOT_FOUND, `Image ${req.image_id} not found`);
    await ctx.write({ result: { status: GS.SUCCESS }, entry_id: '1', eof: true });
  },
};

// -------------------------------------------------------- router handlers --

const router = {
  async TaskExecStart(req) {
    const sb = liveTask(req.task_id);
    if (!req.exec_id) fail(Status.INVALID_ARGUMENT, 'exec_id must be set');
    if (sb.execs.has(req.exec_id)) return {}; // idempotent retry
    startExec(sb, req);
    return {};
  },

  async TaskExecWait(req, call) {
    const ex = getExec(getTask(req.task_id), req.exec_id);
    let gone = false;
    call.on('cancelled', () => { gone = true; ex.cond.notify(); });
    while (!ex.exit && !gone) await ex.cond.wait();
    if (!ex.exit) fail(Status.CANCELLED, 'cancelled');
    return { ...ex.exit };
  },

  async TaskExecPoll(req) {
    const ex = getExec(getTask(req.task_id), req.exec_id);
    return ex.exit ? { ...ex.exit } : {};
  },

  async TaskExecStdinWrite(req) {
    const ex = getExec(liveTask(req.task_id), req.exec_id);
    const data = req.data ?? Buffer.alloc(0);
    const off = Number(req.offset ?? 0);
    if (off > ex.stdinOffset) fail(Status.INVALID_ARGUMENT, `stdin offset ${off} is past the ${ex.stdinOffset} bytes written`);
    const fresh = data.subarray(ex.stdinOffset - off); // drop bytes already written (a retry)
    if (fresh.length && !ex.stdinEof) {
      ex.child.stdin.write(fresh);
      ex.stdinOffset += fresh.length;
    }
    if (req.eof && !ex.stdinEof) { ex.stdinEof = true; ex.child.stdin.end(); }
    return {};
  },

  async TaskSnapshotFilesystem(req) {
    const sb = liveTask(req.task_id);
    const ttl = req.ttl_seconds;
    if (ttl !== undefined && Number(ttl) !== -1 && Number(ttl) <= 0) {
      fail(Status.INVALID_ARGUMENT, 'ttl_seconds must be positive or -1');
    }
    const sid = req.snapshot_id;
    if (sid && snapshotsById.has(sid)) return { image_id: await snapshotsById.get(sid) };
    const p = snapshotFs(sb);
    if (sid) snapshotsById.set(sid, p);
    try {
      return { image_id: await p };
    } catch (e) {
      snapshotsById.delete(sid);
      throw e;
    }
  },
};

const routerStreams = {
  async TaskExecStdioRead(req, call, ctx) {
    const ex = getExec(getTask(req.task_id), req.exec_id);
    const fdName = (req.file_descriptor ?? 0) === 1 ? 'stderr' : 'stdout';
    const buf = fdName === 'stderr' ? ex.err : ex.out;
    let off = Number(req.offset ?? 0);
    let sent = 0;
    call.on('cancelled', () => ex.cond.notify());
    for (;;) {
      if (ctx.cancelled) return;
      const cut = faults.cut_stream;
      const cutting = cut && cut.count > 0 && (cut.fd === 'any' || cut.fd === fdName);
      if (off < buf.length) {
        let max = 1 << 20;
        if (cutting) max = Math.min(max, Math.max(0, cut.after_bytes - sent));
        if (max > 0) {
          const data = buf.read(off, max);
          off += data.length; sent += data.length;
          if (!(await ctx.write({ data }))) return;
          continue;
        }
      }
      if (cutting && (sent >= cut.after_bytes) && (off < buf.length || !buf.eof)) {
        // Cut mid-output: some bytes sent, more to come.
        cut.count--;
        ctx.entry.fault = `cut_stream:${cut.mode}`;
        if (cut.mode === 'rst' && resetStream(call)) { ctx.entry.code = 'rst'; return; }
        fail(cut.code, 'injected fault: stream cut');
      }
      if (off >= buf.length && buf.eof) return;
      await ex.cond.wait();
    }
  },
};

// ----------------------------------------------------------------- server --

const pkgDef = protoLoader.loadSync(PROTO, {
  keepCase: true, longs: Number, enums: Number, defaults: false, oneofs: true,
});
const CONTROL = 'modal.client.ModalClient';
const ROUTER = 'modal.task_command_router.TaskCommandRouter';

function serviceDef(protoName, wireName, unary, streams) {
  const def = pkgDef[protoName];
  const out = {}; const impl = {};
  for (const [name, m] of Object.entries(def)) {
    // The shared .proto declares both services in package modal.client (one
    // package per file); mount each at its real upstream path.
    out[name] = { ...m, path: `/${wireName}/${name}` };
    const method = m.path.split('/').pop();
    if (unary[method]) impl[name] = wrapUnary(wireName, method, unary[method]);
    else if (streams[method]) impl[name] = wrapStream(wireName, method, streams[method]);
    else throw new Error(`no handler for ${wireName}/${method}`);
  }
  return [out, impl];
}

const server = new grpc.Server({
  'grpc.max_receive_message_length': 100 * 1024 * 1024,
  'grpc.max_send_message_length': 100 * 1024 * 1024,
  'grpc-node.max_session_memory': 1024,
});
server.addService(...serviceDef('modal.client.ModalClient', CONTROL, control, controlStreams));
server.addService(...serviceDef('modal.client.TaskCommandRouter', ROUTER, router, routerStreams));

let routerUrl = '';
const port = await new Promise((resolve, reject) => {
  // --tls-cert/--tls-key: TLS as in production (the bench's check that
  // calls share one connection); otherwise h2c.
  const creds = opts.tlsCert
    ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: fs.readFileSync(opts.tlsCert), private_key: fs.readFileSync(opts.tlsKey) }], false)
    : grpc.ServerCredentials.createInsecure();
  server.bindAsync(`${opts.host}:${opts.port}`, creds, (err, p) => (err ? reject(err) : resolve(p)));
});
// The SDK insists on an https router URL but, because the control-plane URL
// is 127.0.0.1, dials it in plaintext (h2c): so the router is this port.
// On another loopback address (--host) both sides use TLS to it.
routerUrl = opts.routerUrl ?? `https://${opts.host}:${port}`;

// ------------------------------------------------------------------ admin --

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
      const s = Buffer.concat(parts).toString('utf8').trim();
      try { resolve(s ? JSON.parse(s) : {}); } catch (e) { reject(e); }
    });
    req.on('error', reject);
  });
}

function sandboxInfo(sb) {
  return {
    id: sb.id, name: sb.name, app_id: sb.appId, app_name: sb.appName, environment: sb.env,
    task_id: sb.taskId, image_id: sb.imageId, fs_dir: sb.fsDir, running: !sb.result,
    result: sb.result, execs: [...sb.execs.values()].map((e) => ({
      exec_id: e.id, argv: e.argv, exit: e.exit, stdout_bytes: e.out.length, stderr_bytes: e.err.length,
    })),
  };
}

const admin = http.createServer(async (req, res) => {
  const send = (code, obj) => {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(obj));
  };
  try {
    const url = new URL(req.url, 'http://127.0.0.1');
    const p = url.pathname;
    if (req.method === 'GET' && p === '/__admin/log') return send(200, callLog);
    if (req.method === 'GET' && p === '/__admin/faults') return send(200, publicFaults());
    if (req.method === 'POST' && p === '/__admin/faults') {
      applyFaults(await readBody(req));
      return send(200, publicFaults());
    }
    if (req.method === 'POST' && p === '/__admin/reset') {
      const body = await readBody(req);
      callLog = [];
      resetFaults(null);
      revokedBeforeMs = 0;
      if (body.sandboxes) {
        for (const sb of sandboxes.values()) finishSandbox(sb, { status: GS.TERMINATED });
        stopSpare(); // no process of ours is left (the next create starts one again)
      }
      return send(200, { ok: true });
    }
    if (req.method === 'GET' && p === '/__admin/sandboxes') return send(200, [...sandboxes.values()].map(sandboxInfo));
    const m = /^\/__admin\/sandboxes\/([^/]+)(\/kill)?$/.exec(p);
    if (m) {
      const sb = sandboxes.get(decodeURIComponent(m[1]));
      if (!sb) return send(404, { error: 'no such sandbox' });
      if (req.method === 'GET' && !m[2]) return send(200, sandboxInfo(sb));
      if (req.method === 'POST' && m[2]) {
        // "Killed behind the client's back" (conformance killSandboxExternally).
        const body = await readBody(req);
        const status = GS[String(body.status ?? 'TERMINATED').toUpperCase()] ?? GS.TERMINATED;
        finishSandbox(sb, { status, ...(body.exitcode != null ? { exitcode: Number(body.exitcode) } : {}) });
        return send(200, sandboxInfo(sb));
      }
    }
    return send(404, { error: 'not found' });
  } catch (e) {
    return send(400, { error: String(e.message ?? e) });
  }
});
const adminPort = await new Promise((resolve, reject) => {
  admin.once('error', reject);
  admin.listen(opts.adminPort, '127.0.0.1', () => resolve(admin.address().port));
});

resetFaults(opts.faults);
process.stdout.write(`LISTENING ${port} ADMIN ${adminPort}\n`);
log(`control plane + router on ${opts.host}:${port} (${opts.tlsCert ? 'TLS' : 'h2c'}), router url ${routerUrl}, admin on 127.0.0.1:${adminPort}, state ${stateDir}, isolation ${opts.isolation}`);

// --------------------------------------------------------------- shutdown --

let stopping = false;
function shutdown(why) {
  if (stopping) return;
  stopping = true;
  log(`stopping (${why})`);
  for (const sb of sandboxes.values()) {
    killGroup(sb.entry);
    for (const ex of sb.execs.values()) killGroup(ex.child);
    stopView(sb.view);
  }
  stopSpare();
  server.forceShutdown();
  admin.close();
  admin.closeAllConnections?.();
  if (ownStateDir) {
    for (const sb of sandboxes.values()) unlockOverlayWork(path.dirname(sb.fsDir));
    try { fs.rmSync(stateDir, { recursive: true, force: true }); } catch { /* best effort */ }
  }
  setTimeout(() => process.exit(0), 50).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
if (opts.stdinExit) {
  process.stdin.on('end', () => shutdown('stdin EOF'));
  process.stdin.on('error', () => shutdown('stdin error'));
  process.stdin.resume();
}
