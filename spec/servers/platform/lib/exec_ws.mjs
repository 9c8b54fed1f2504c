// The exec WebSocket (docs/protocols/platform.md §3.2, §3.3, §3.4):
// subprotocol JWT check at the upgrade, then one command per socket:
// init_exec → process → tagged binary output frames → {"type":"exit"} → wait
// for the client's close.
import { echoEncode } from './echo.mjs';
import { randomBytes } from 'node:crypto';
import { WebSocketServer, WebSocket } from 'ws';
import { takeWsRules } from './faults.mjs';
import { errorType } from './http_util.mjs';
import { RequestLog } from './reqlog.mjs';
import { buildEnv, pauseOutput, resolveCwd, runCommand } from './runner.mjs';

export const SUBPROTOCOL = 'railway-shell';
export const WS_PATH = '/ws/exec';
const TAG_STDIN = 0;
const TAG_STDOUT = 1;
const TAG_STDERR = 3;
const HIGH_WATER = 4 * 1024 * 1024;
const INIT_KEYS = new Set(['command', 'cwd', 'env', 'durable_session_name', 'resume_from_last_read']);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function parseProtocols(header) {
  if (header === undefined) return [];
  return String(header).split(',').map((s) => s.trim()).filter((s) => s !== '');
}

function rejectUpgrade(socket, status, message) {
  const body = JSON.stringify({ error: { message, type: errorType(status) } });
  const reason = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 410: 'Gone' }[status] ?? 'Error';
  if (!socket.destroyed) {
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
}

function isStringMap(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');
}

export class ExecGateway {
  constructor(app) {
    this.app = app;
    this.wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      maxPayload: 64 * 1024 * 1024,
      handleProtocols: (set) => (set.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
    });
    // A malformed upgrade (bad key/version/protocol syntax) is answered 400
    // by us, so the log entry says why.
    this.wss.on('wsClientError', (err, socket, req) => {
      if (req.plEntry) req.plEntry.rejected = 400;
      rejectUpgrade(socket, 400, `Bad WebSocket handshake: ${err.message}`);
    });
    this.stalled = new Set();
    this.sessions = new Set();
  }

  // → { ok, status, why, sb, leaseIndex }
  checkAuth(offered) {
    const strict = this.app.faults.strict_subprotocols;
    if (!offered.includes(SUBPROTOCOL)) return { ok: false, status: 401, why: 'missing_subprotocol' };
    if (strict && (offered.length !== 2 || offered[0] !== SUBPROTOCOL)) {
      return { ok: false, status: 401, why: 'bad_subprotocol_list' };
    }
    const candidates = offered.filter((p) => p !== SUBPROTOCOL);
    if (candidates.length === 0) return { ok: false, status: 401, why: 'missing_jwt' };
    let first;
    for (const c of candidates) {
      const v = this.app.jwt.verify(c);
      if (v.ok) {
        const p = v.payload;
        const leaseIndex = p.lix;
        if (leaseIndex <= this.app.store.revokedBefore) return { ok: false, status: 401, why: 'revoked', leaseIndex };
        const sb = this.app.store.sandboxes.get(p.sub);
        if (!sb) return { ok: false, status: 401, why: 'unknown_sandbox', leaseIndex };
        if (sb.destroyedAt) return { ok: false, status: 410, why: 'sandbox_destroyed', sb, leaseIndex };
        return { ok: true, sb, leaseIndex };
      }
      first ??= v;
    }
    return { ok: false, status: 401, why: `jwt_${first.why}`, leaseIndex: first.payload?.lix };
  }

  async handleUpgrade(req, socket, head) {
    socket.on('error', () => {});
    const url = new URL(req.url, 'http://127.0.0.1');
    const offered = parseProtocols(req.headers['sec-websocket-protocol']);
    const entry = this.app.log.addWs({
      path: url.pathname,
      offered_raw: req.headers['sec-websocket-protocol'] ?? null,
      offered,
      authorization: req.headers.authorization ?? null,
      headers: { ...req.headers },
    });
    this.app.info(`WS ${url.pathname} offered=${offered.length} protocol(s)`);
    if (url.pathname !== WS_PATH) {
      entry.rejected = 404;
      rejectUpgrade(socket, 404, 'Route not found');
      return;
    }
    const auth = this.checkAuth(offered);
    entry.auth = auth.ok ? 'ok' : auth.why;
    entry.sandbox_id = auth.sb?.id ?? null;
    entry.lease_index = auth.leaseIndex ?? null;
    const target = { sandboxId: auth.sb?.id, leaseIndex: auth.leaseIndex };
    const gateRules = takeWsRules(this.app.faults, target, 'handshake');
    entry.faults = gateRules.map((r) => r.action);
    const delay = gateRules.filter((r) => r.action === 'delay').reduce((a, r) => a + r.delay_ms, 0);
    if (delay > 0) await sleep(delay);
    if (socket.destroyed) {
      entry.rejected = 'client_gone';
      return;
    }
    if (gateRules.some((r) => r.action === 'stall')) {
      // Never answer the handshake: exercises the client's handshake deadline.
      entry.stalled = true;
      this.stalled.add(socket);
      socket.on('close', () => this.stalled.delete(socket));
      return;
    }
    const rej = gateRules.find((r) => r.action === 'reject');
    if (rej) {
      entry.rejected = rej.status;
      rejectUpgrade(socket, rej.status, 'Injected handshake rejection');
      return;
    }
    if (!auth.ok) {
      entry.rejected = auth.status;
      rejectUpgrade(socket, auth.status, auth.status === 410 ? 'Sandbox was destroyed' : 'Invalid or expired exec lease');
      return;
    }
    const rules = takeWsRules(this.app.faults, target, 'session');
    entry.faults.push(...rules.map((r) => r.action));
    req.plEntry = entry;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.#session(ws, auth.sb, entry, rules));
  }

  #session(ws, sb, entry, rules) {
    const app = this.app;
    const s = {
      proc: null,
      started: false,
      stdinClosed: false,
      exited: false,
      serverClosing: false,
      graceTimer: null,
      pendingSends: 0,
      paused: false,
      onFlushed: [],
    };
    this.sessions.add(ws);
    sb.sockets.add(ws);
    app.store.touch(sb, app.faults.idle_ms_per_minute);
    entry.opened = true;
    entry.selected_protocol = ws.protocol;
    entry.warnings = [];
    const rule = (action) => rules.find((r) => r.action === action);
    const closeRule = rule('close_before_exit');
    const chunkRule = rule('chunk_bytes');

    const sendRaw = (data, isBinary) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      s.pendingSends++;
      ws.send(data, { binary: isBinary }, () => {
        s.pendingSends--;
        if (s.paused && ws.bufferedAmount < HIGH_WATER / 2) {
          s.paused = false;
          if (s.proc) pauseOutput(s.proc, false);
        }
        if (s.pendingSends === 0 && s.onFlushed.length) {
          for (const f of s.onFlushed.splice(0)) f();
        }
      });
      if (!s.paused && ws.bufferedAmount > HIGH_WATER && s.proc) {
        s.paused = true;
        pauseOutput(s.proc, true);
      }
    };
    const sendText = (obj) => {
      const text = typeof obj === 'string' ? obj : JSON.stringify(obj);
      entry.frames_sent.text.push(text);
      sendRaw(text, false);
    };
    const sendOutput = (tag, chunk) => {
      const key = tag === TAG_STDOUT ? 'stdout' : 'stderr';
      const step = chunkRule ? chunkRule.bytes : chunk.length;
      for (let i = 0; i < chunk.length; i += step) {
        const piece = chunk.subarray(i, i + step);
        const frame = Buffer.allocUnsafe(piece.length + 1);
        frame[0] = tag;
        piece.copy(frame, 1);
        entry.frames_sent[`${key}_frames`]++;
        entry.frames_sent[`${key}_bytes`] += piece.length;
        sendRaw(frame, true);
      }
    };
    const whenFlushed = (fn) => {
      if (s.pendingSends === 0) fn();
      else s.onFlushed.push(fn);
    };
    const serverClose = (code, reason) => {
      s.serverClosing = true;
      if (ws.readyState !== WebSocket.OPEN) return;
      entry.server_close = { code, reason };
      if (code === 1006) ws.terminate();
      else if (code === 1005) ws.close();
      else ws.close(code, reason);
    };
    const injectClose = (r) => {
      s.serverClosing = true;
      // {request:<enc>} in the reason echoes the init_exec frame (a careless
      // server quoting what it was sent), cut to the 123 bytes a reason holds.
      let reason = r.reason.replace(/\{request:([a-z_0-9]+)\}/g, (_, enc) => echoEncode(s.initText ?? '', enc));
      while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -1);
      r = { ...r, reason };
      entry.injected_close = { code: r.code, reason: r.reason, at: r.at };
      if (s.proc && s.proc.running) s.proc.kill();
      // Let queued output reach the client first, so "partial output kept"
      // is observable even for an abrupt (1006) drop.
      whenFlushed(() => {
        serverClose(r.code, r.reason);
        if (r.destroy_sandbox) {
          sb.sockets.delete(ws);
          app.store.destroy(sb).catch(() => {});
        }
      });
    };
    const warn = (w) => {
      if (entry.warnings.length < 100) entry.warnings.push(w);
    };

    const onExit = ({ exitCode, signal }) => {
      s.exited = true;
      sb.procs.delete(s.proc);
      app.store.touch(sb, app.faults.idle_ms_per_minute);
      entry.exit_code = exitCode;
      entry.exit_signal = signal;
      if (ws.readyState !== WebSocket.OPEN) return;
      if (closeRule && closeRule.at === 'exit') {
        injectClose(closeRule);
        return;
      }
      sendText(rule('exit_without_code') ? { type: 'exit', data: {} } : { type: 'exit', data: { exit_code: exitCode } });
      entry.exit_sent = true;
      if (rule('output_after_exit')) sendOutput(TAG_STDOUT, Buffer.from('output after exit\n'));
      const after = rule('close_after_exit');
      if (after) {
        whenFlushed(() => serverClose(after.code, after.reason));
        return;
      }
      // The client is expected to close (1000) after the exit frame; close
      // ourselves only if it does not within the grace period.
      s.graceTimer = setTimeout(() => {
        entry.grace_close = true;
        serverClose(1000, '');
      }, app.faults.exit_close_grace_ms);
      s.graceTimer.unref();
    };

    const startExec = (data) => {
      s.started = true;
      entry.command = data.command;
      entry.cwd = data.cwd ?? null;
      entry.env = data.env ?? null;
      if (closeRule && closeRule.at === 'init') {
        injectClose(closeRule);
        return;
      }
      const flood = rule('flood');
      if (flood) {
        // A hostile endpoint: small control frames (heartbeats, session
        // names, unknown tags) as fast as the client reads, for delay_ms,
        // then the command runs as usual. Not logged frame by frame.
        const until = Date.now() + (flood.delay_ms ?? 3000);
        let frames = 0;
        const pump = () => {
          while (ws.readyState === WebSocket.OPEN && Date.now() < until) {
            if (ws.bufferedAmount > 1 << 20) return setTimeout(pump, 1);
            const k = frames++ % 3;
            if (k === 0) ws.send('{"type":"heartbeat","data":{}}');
            else if (k === 1) ws.send(`{"type":"durable_session","data":{"durable_session_name":"ds_${frames}"}}`);
            else ws.send(Buffer.from([9, frames & 255]), { binary: true });
          }
          entry.flood_frames = frames;
          if (ws.readyState === WebSocket.OPEN) runIt();
          return undefined;
        };
        const runIt = () => startCommand(data);
        pump();
        return;
      }
      startCommand(data);
    };

    const startCommand = (data) => {
      if (rule('noise')) {
        sendRaw(Buffer.from([TAG_STDOUT]), true);
        sendRaw(Buffer.from([2, 0x78]), true);
        sendText('{not json');
        sendText({ type: 'heartbeat', data: {} });
        sendText({ type: 'durable_session', data: { durable_session_name: `ds_${randomBytes(4).toString('hex')}` } });
      }
      if (typeof data.durable_session_name === 'string' || rule('durable_session')) {
        sendText({ type: 'durable_session', data: { durable_session_name: data.durable_session_name ?? `ds_${randomBytes(4).toString('hex')}` } });
      }
      s.proc = runCommand({
        command: data.command,
        cwd: resolveCwd(sb.dir, data.cwd),
        env: buildEnv(sb, data.env),
        onStdout: (b) => sendOutput(TAG_STDOUT, b),
        onStderr: (b) => sendOutput(TAG_STDERR, b),
        onExit,
      });
      entry.pid = s.proc.pid;
      if (s.proc.running) {
        sb.procs.add(s.proc);
        sb.pgids.add(s.proc.pid);
      }
      if (s.stdinClosed) s.proc.closeStdin();
    };

    const onText = (text) => {
      let msg;
      try {
        msg = JSON.parse(text);
      } catch {
        warn('unparseable text frame');
        return;
      }
      const type = msg?.type;
      if (type === 'init_exec') {
        if (s.started) {
          warn('duplicate init_exec ignored');
          return;
        }
        const d = msg.data;
        if (typeof d !== 'object' || d === null || typeof d.command !== 'string' || d.command === '' ||
            (d.cwd !== undefined && typeof d.cwd !== 'string') || (d.env !== undefined && !isStringMap(d.env))) {
          entry.protocol_error = 'invalid init_exec';
          serverClose(1008, 'invalid init_exec');
          return;
        }
        for (const k of Object.keys(d)) if (!INIT_KEYS.has(k)) warn(`init_exec.data has unexpected key ${k}`);
        if (d.cwd === '') warn('init_exec.data.cwd is empty (spec: omit it)');
        if (d.env !== undefined && Object.keys(d.env).length === 0) warn('init_exec.data.env is empty (spec: omit it)');
        s.initText = text;
        startExec(d);
      } else if (type === 'stdin_close') {
        if (!s.started) warn('stdin_close before init_exec');
        s.stdinClosed = true;
        s.proc?.closeStdin();
      } else if (type === 'stdin') {
        // Extension (not sent by the upstream client): stdin bytes as text.
        const d = msg.data ?? {};
        let buf;
        if (typeof d.data === 'string') buf = Buffer.from(d.data, 'utf8');
        else if (typeof d.base64 === 'string') buf = Buffer.from(d.base64, 'base64');
        else {
          warn('stdin frame without data');
          return;
        }
        writeStdin(buf);
      } else if (type === 'signal') {
        const name = String(msg.data?.signal ?? '');
        const sig = name.startsWith('SIG') ? name : `SIG${name}`;
        entry.signals = [...(entry.signals ?? []), sig];
        if (!s.proc?.signal(sig)) warn(`signal ${sig} not delivered`);
      } else {
        warn(`unknown frame type ${JSON.stringify(type)}`);
      }
    };

    const writeStdin = (buf) => {
      if (!s.started) warn('stdin before init_exec ignored');
      else if (s.stdinClosed) warn('stdin after stdin_close ignored');
      else s.proc?.writeStdin(buf);
    };

    ws.on('message', (data, isBinary) => {
      RequestLog.frameIn(entry, data, isBinary);
      // Once the server has started closing, frames are logged but not acted on.
      if (s.serverClosing) return;
      if (!isBinary) onText(data.toString('utf8'));
      else if (data.length >= 1 && data[0] === TAG_STDIN) writeStdin(data.subarray(1));
      else warn(`binary frame with tag ${data[0]} ignored`);
    });
    ws.on('error', (err) => warn(`socket error: ${err.message}`));
    ws.on('close', (code, reason) => {
      this.sessions.delete(ws);
      sb.sockets.delete(ws);
      if (s.graceTimer) clearTimeout(s.graceTimer);
      entry.close = {
        code,
        reason: reason.toString('utf8'),
        initiator: s.serverClosing ? 'server' : 'client',
        after_exit: entry.exit_sent === true,
      };
      if (s.proc && s.proc.running) {
        // The client cancels by closing the socket: the command dies with it.
        entry.killed_on_close = true;
        s.proc.kill();
      }
      app.store.touch(sb, app.faults.idle_ms_per_minute);
    });

    if (closeRule && closeRule.at === 'open') injectClose(closeRule);
  }

  closeAll() {
    for (const ws of this.sessions) ws.terminate();
    this.sessions.clear();
    for (const sock of this.stalled) sock.destroy();
    this.stalled.clear();
  }
}
